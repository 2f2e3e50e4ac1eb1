package slidingcounter_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestMaxKeysUnderAFlood: distinct keys flood a limiter capped by
// hotlimit.WithMaxKeys; see limitertest.KeyCapFlood.
func TestMaxKeysUnderAFlood(t *testing.T) {
	limitertest.KeyCapFlood(t,
		limitertest.Adapt(slidingcounter.New, hotlimit.WithMaxKeys(limitertest.FloodCap())),
		func(epoch int64) limitertest.Model { return models.NewSlidingCounter(10, time.Second).Take },
		10, time.Second, 192)
}

// TestEvictionUnderACall: a Sweep, an auto-sweep step and a key cap's
// eviction each evict a key between a call's map load and its write; see
// limitertest.EvictionUnderACall.
func TestEvictionUnderACall(t *testing.T) {
	const limit, window = 3, time.Second
	limitertest.EvictionUnderACall(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidingcounter.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewSlidingCounter(limit, window).Take },
		limit, window)
}

// TestKeyCapHammer: a concurrent flood of new keys at the cap leaves the
// hot keys' decisions exact; see limitertest.KeyCapHammer.
func TestKeyCapHammer(t *testing.T) {
	const limit, window = 5, time.Second
	limitertest.KeyCapHammer(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidingcounter.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewSlidingCounter(limit, window).Take },
		limit, window, 32)
}

// TestKeyCapEdges: caps of 0, below 0, 1 and math.MaxInt, and Sweep on an
// empty and a large limiter; see limitertest.KeyCapEdges.
func TestKeyCapEdges(t *testing.T) {
	limitertest.KeyCapEdges(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(slidingcounter.New, opts...)
		},
		3, time.Second)
}

// TestCappedRetryAfterIsNeverPastTheClocksEnd: the key cap's refusal says
// Never when no held key goes idle before the clock's end; see
// limitertest.CappedNeverPastTheClocksEnd.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	limitertest.CappedNeverPastTheClocksEnd(t, limitertest.Adapt(slidingcounter.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterIsTheEndOfTheNextWindow: the key cap's refusal of a
// new key says when the next window ends, after which the key held has
// left the estimate and may go idle: at 103 s, 3 s into a 10 s window,
// 17 s later, counted from the window's start, not two windows from now.
func TestCappedRetryAfterIsTheEndOfTheNextWindow(t *testing.T) {
	now := int64(103 * time.Second)
	l, err := slidingcounter.New(1, 10*time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, l.Take("a", 1).Allowed)
	d := l.Take("b", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, 17*time.Second, d.RetryAfter)
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: see
// limitertest.CappedAllowRemainingIsNone.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	limitertest.CappedAllowRemainingIsNone(t, limitertest.Adapt(slidingcounter.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterEndingAtTheClocksLastReading: a window of
// 60247241209 ns divides math.MaxInt64 (153092023 windows), so the next
// window's end can be the clock's last reading itself: the key cap's
// refusal waits until exactly then, a time the clock reaches, not Never.
func TestCappedRetryAfterEndingAtTheClocksLastReading(t *testing.T) {
	const window = 60247241209
	require.Zero(t, math.MaxInt64%window)
	now := int64(math.MaxInt64) - 2*window + 5 // 5 ns into the window before the last
	l, err := slidingcounter.New(1, window, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, l.Take("a", 1).Allowed)
	d := l.Take("b", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, time.Duration(math.MaxInt64-now), d.RetryAfter, "until math.MaxInt64")
	now++
	assert.Equal(t, time.Duration(math.MaxInt64-now), l.Take("b", 1).RetryAfter, "a nanosecond later, one less")
}
