package slidinglog_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestMaxKeysUnderAFlood: distinct keys flood a limiter capped by
// hotlimit.WithMaxKeys; see limitertest.KeyCapFlood.
func TestMaxKeysUnderAFlood(t *testing.T) {
	limitertest.KeyCapFlood(t,
		limitertest.Adapt(slidinglog.New, hotlimit.WithMaxKeys(limitertest.FloodCap())),
		func(epoch int64) limitertest.Model { return models.NewSlidingLog(10, time.Second).Take },
		10, time.Second, 320)
}

// TestEvictionUnderACall: a Sweep, an auto-sweep step and a key cap's
// eviction each evict a key between a call's map load and its write; see
// limitertest.EvictionUnderACall.
func TestEvictionUnderACall(t *testing.T) {
	const limit, window = 3, time.Second
	limitertest.EvictionUnderACall(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidinglog.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewSlidingLog(limit, window).Take },
		limit, window)
}

// TestKeyCapHammer: a concurrent flood of new keys at the cap leaves the
// hot keys' decisions exact; see limitertest.KeyCapHammer.
func TestKeyCapHammer(t *testing.T) {
	const limit, window = 5, time.Second
	limitertest.KeyCapHammer(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidinglog.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewSlidingLog(limit, window).Take },
		limit, window, 32)
}

// TestKeyCapEdges: caps of 0, below 0, 1 and math.MaxInt, and Sweep on an
// empty and a large limiter; see limitertest.KeyCapEdges.
func TestKeyCapEdges(t *testing.T) {
	limitertest.KeyCapEdges(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidinglog.New, opts...)
		},
		3, time.Second)
}

// TestCappedRetryAfterIsNeverPastTheClocksEnd: the key cap's refusal says
// Never when no held key goes idle before the clock's end; see
// limitertest.CappedNeverPastTheClocksEnd.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	limitertest.CappedNeverPastTheClocksEnd(t, limitertest.Adapt(slidinglog.New, hotlimit.WithMaxKeys(1)))
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: see
// limitertest.CappedAllowRemainingIsNone.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	limitertest.CappedAllowRemainingIsNone(t, limitertest.Adapt(slidinglog.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterCountsFromAClockBeforeTheEarliestTime: the limiter's
// time stands still at its earliest (−2^61 ns + Window since the epoch)
// while the clock is before it, so a request logged 5 s before the clock
// gets there leaves the window 5 s + 1 s later, and a new key that
// hotlimit.WithMaxKeys turns away is told to wait that long, as the held
// key's own ResetAfter says, not a window.
func TestCappedRetryAfterCountsFromAClockBeforeTheEarliestTime(t *testing.T) {
	var now atomic.Int64
	lim, err := slidinglog.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1))
	require.NoError(t, err)
	now.Store(math.MinInt64>>2 + int64(time.Second) - int64(5*time.Second))
	held := lim.Take("a", 1)
	require.True(t, held.Allowed)
	require.Equal(t, 6*time.Second, held.ResetAfter, "the held request leaves 5 s + 1 s later")
	d := lim.Take("b", 1)
	assert.False(t, d.Allowed, "the cap turns the new key away")
	assert.Equal(t, 6*time.Second, d.RetryAfter, "the held key goes idle 5 s + 1 s later")
}
