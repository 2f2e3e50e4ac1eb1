package redislimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestWaitsExactAtClockRangeEnds: a key taken at the latest reading the
// limiter accepts ([redislimit.ClockRange]) and then asked at the earliest,
// with an odd window near the largest (2^50 ticks), reports the model's
// RetryAfter and ResetAfter to the nanosecond: the waits, the whole range
// plus up to a fill time or a window or two, stay exact in Lua's doubles.
// The models' epoch is the earliest reading, so that the models count as
// Redis does, by differences.
func TestWaitsExactAtClockRangeEnds(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	const r = redislimit.ClockRange
	const window = time.Duration(1<<50 - 3)
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: window, Burst: 3},
		{Algorithm: hotlimit.GCRA, Limit: 1, Window: window, Burst: 3},
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: window},
		{Algorithm: hotlimit.SlidingCounter, Limit: 3, Window: window},
		{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: window},
	} {
		t.Run(c.String(), func(t *testing.T) {
			var clock atomic.Int64
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
			var m interface {
				Take(key string, n int, now int64) hotlimit.Decision
			}
			switch c.Algorithm {
			case hotlimit.TokenBucket:
				m = models.NewTokenBucket(c.Limit, c.Burst, c.Window, -r)
			case hotlimit.GCRA:
				m = models.NewGCRA(c.Limit, c.Burst, c.Window, -r)
			default:
				m = newModel(c)
			}
			for i, step := range []struct {
				at int64
				n  int
			}{{r, 3}, {-r, 1}, {-r, 0}, {-r + 1, 2}, {-r + 7, 0}, {r - 1, 1}, {r, 1}} {
				clock.Store(step.at)
				want := m.Take("k", step.n, step.at)
				got := take(t, lim, "k", step.n)
				require.Equal(t, want, got, "step %d: Take(%d) at %d", i, step.n, step.at)
			}
			assert.Equal(t, fmt.Sprint(clock.Load()), fmt.Sprint(int64(r)))
		})
	}
}
