package tokenbucket_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestMaxKeysUnderAFlood: distinct keys flood a limiter capped by
// hotlimit.WithMaxKeys; see limitertest.KeyCapFlood.
func TestMaxKeysUnderAFlood(t *testing.T) {
	limitertest.KeyCapFlood(t,
		limitertest.Adapt(tokenbucket.New, hotlimit.WithMaxKeys(limitertest.FloodCap())),
		func(epoch int64) limitertest.Model { return models.NewTokenBucket(10, 10, time.Second, epoch).Take },
		10, time.Second, 192)
}

// TestEvictionUnderACall: a Sweep, an auto-sweep step and a key cap's
// eviction each evict a key between a call's map load and its write; see
// limitertest.EvictionUnderACall.
func TestEvictionUnderACall(t *testing.T) {
	const limit, window = 3, time.Second
	limitertest.EvictionUnderACall(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(tokenbucket.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewTokenBucket(limit, limit, window, epoch).Take },
		limit, window)
}

// TestKeyCapHammer: a concurrent flood of new keys at the cap leaves the
// hot keys' decisions exact; see limitertest.KeyCapHammer.
func TestKeyCapHammer(t *testing.T) {
	const limit, window = 5, time.Second
	limitertest.KeyCapHammer(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(tokenbucket.New, opts...)
		},
		func(epoch int64) limitertest.Model { return models.NewTokenBucket(limit, limit, window, epoch).Take },
		limit, window, 32)
}

// TestKeyCapEdges: caps of 0, below 0, 1 and math.MaxInt, and Sweep on an
// empty and a large limiter; see limitertest.KeyCapEdges.
func TestKeyCapEdges(t *testing.T) {
	limitertest.KeyCapEdges(t,
		func(opts ...hotlimit.Option) limitertest.Constructor {
			return limitertest.Adapt(tokenbucket.New, opts...)
		},
		3, time.Second)
}

// TestCappedRetryAfterIsNeverPastTheClocksEnd: the key cap's refusal says
// Never when no held key goes idle before the clock's end; see
// limitertest.CappedNeverPastTheClocksEnd.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	limitertest.CappedNeverPastTheClocksEnd(t, limitertest.Adapt(tokenbucket.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterCountsFromAClockBehindTheEpoch: see
// limitertest.CappedFromAClockBehindTheEpoch.
func TestCappedRetryAfterCountsFromAClockBehindTheEpoch(t *testing.T) {
	limitertest.CappedFromAClockBehindTheEpoch(t, limitertest.Adapt(tokenbucket.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterEndingAtTheClocksLastReading: the key cap's refusal
// says the fill time when the held keys fill exactly at math.MaxInt64, the
// last reading a clock makes, and Never one nanosecond later. At 5 per
// second, an empty bucket fills in 1 s.
func TestCappedRetryAfterEndingAtTheClocksLastReading(t *testing.T) {
	now := int64(math.MaxInt64 - 10*time.Second) // the epoch
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	now = math.MaxInt64 - int64(time.Second)
	held := lim.Take("a", 5)
	require.True(t, held.Allowed)
	require.Equal(t, time.Second, held.ResetAfter, "full again at math.MaxInt64")
	d := lim.Take("b", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, time.Second, d.RetryAfter, "a fill time from now ends at math.MaxInt64")
	now++
	d = lim.Take("b", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter, "a fill time from now ends past every reading")
}

// TestCappedRetryAfterFromAClockFarBehindTheEpoch: the key cap's refusal
// from a clock so far behind the epoch that reaching it and then a fill
// time (1 s at 5 per second) takes longer than math.MaxInt64 says Never,
// never a wrapped, negative wait.
func TestCappedRetryAfterFromAClockFarBehindTheEpoch(t *testing.T) {
	now := int64(0) // the epoch
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, lim.Allow("a"))
	for _, at := range []int64{math.MinInt64, -(math.MaxInt64 - int64(time.Second)) - 1} {
		now = at
		d := lim.Take("b", 1)
		assert.False(t, d.Allowed)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "at %d", at)
	}
	now = -int64(time.Hour)
	assert.Equal(t, time.Hour+time.Second, lim.Take("b", 1).RetryAfter, "the epoch, then a fill time")
}
