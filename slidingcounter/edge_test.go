package slidingcounter_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestWaitsAreExactAtTheEdges: for random limits, windows (non-whole
// seconds included, up to MaxWindow) and clocks near 0, today, 2100 and the
// ends of int64, with steps back: a denial's finite RetryAfter r never ends
// past math.MaxInt64, the same Take r − 1 ns later is denied and r later
// passes; a finite ResetAfter is exactly when the key reports full; and a
// Never holds at math.MaxInt64 (see limitertest.WindowedWaitsAreExact).
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	limitertest.WindowedWaitsAreExact(t, 5, slidingcounter.MaxLimit, slidingcounter.MinWindow, slidingcounter.MaxWindow,
		func(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return slidingcounter.New(limit, window, hotlimit.WithClock(clock))
		})
}

// TestWaitLongerThanADurationIsNever: a clock that steps back about 300
// years behind a drained key's window (300 windows of MaxWindow) reads a
// wait longer than a Duration holds, though it ends before math.MaxInt64:
// both durations are Never, as the package documentation says.
func TestWaitLongerThanADurationIsNever(t *testing.T) {
	var now atomic.Int64
	w := int64(slidingcounter.MaxWindow)
	lim, err := slidingcounter.New(1, slidingcounter.MaxWindow, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(150 * w)
	require.True(t, lim.Allow("k"))
	now.Store(-150 * w)
	assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never, ResetAfter: hotlimit.Never}, lim.Take("k", 1))
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: hotlimit.Never}, lim.Take("k", 0))
}
