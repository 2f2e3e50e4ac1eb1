package gcra_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestMaxKeysUnderAFlood: distinct keys flood a limiter capped by
// hotlimit.WithMaxKeys; see limitertest.KeyCapFlood.
func TestMaxKeysUnderAFlood(t *testing.T) {
	limitertest.KeyCapFlood(t,
		limitertest.Adapt(gcra.New, hotlimit.WithMaxKeys(limitertest.FloodCap())),
		func(epoch int64) limitertest.Model { return models.NewGCRA(10, 10, time.Second, epoch).Take },
		10, time.Second, 192)
}

// TestEvictionUnderACall: a Sweep, an auto-sweep step and a key cap's
// eviction each evict a key between a call's map load and its write; see
// limitertest.EvictionUnderACall.
func TestEvictionUnderACall(t *testing.T) {
	const limit, window = 3, time.Second
	limitertest.EvictionUnderACall(t,
		func(opts ...hotlimit.Option) limitertest.Constructor { return limitertest.Adapt(gcra.New, opts...) },
		func(epoch int64) limitertest.Model { return models.NewGCRA(limit, limit, window, epoch).Take },
		limit, window)
}

// TestKeyCapHammer: a concurrent flood of new keys at the cap leaves the
// hot keys' decisions exact; see limitertest.KeyCapHammer.
func TestKeyCapHammer(t *testing.T) {
	const limit, window = 5, time.Second
	limitertest.KeyCapHammer(t,
		func(opts ...hotlimit.Option) limitertest.Constructor { return limitertest.Adapt(gcra.New, opts...) },
		func(epoch int64) limitertest.Model { return models.NewGCRA(limit, limit, window, epoch).Take },
		limit, window, 32)
}

// TestKeyCapEdges: caps of 0, below 0, 1 and math.MaxInt, and Sweep on an
// empty and a large limiter; see limitertest.KeyCapEdges.
func TestKeyCapEdges(t *testing.T) {
	limitertest.KeyCapEdges(t,
		func(opts ...hotlimit.Option) limitertest.Constructor { return limitertest.Adapt(gcra.New, opts...) },
		3, time.Second)
}

// TestCappedRetryAfterIsNeverPastTheClocksEnd: the key cap's refusal says
// Never when no held key goes idle before the clock's end; see
// limitertest.CappedNeverPastTheClocksEnd.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	limitertest.CappedNeverPastTheClocksEnd(t, limitertest.Adapt(gcra.New, hotlimit.WithMaxKeys(1)))
}

// TestCappedRetryAfterCountsFromAClockBehindTheEpoch: see
// limitertest.CappedFromAClockBehindTheEpoch.
func TestCappedRetryAfterCountsFromAClockBehindTheEpoch(t *testing.T) {
	limitertest.CappedFromAClockBehindTheEpoch(t, limitertest.Adapt(gcra.New, hotlimit.WithMaxKeys(1)))
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: see
// limitertest.CappedAllowRemainingIsNone.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	limitertest.CappedAllowRemainingIsNone(t, limitertest.Adapt(gcra.New, hotlimit.WithMaxKeys(1)))
}

// TestKeyCapEvictsOnlyAKeyFullNow: the key cap makes room for a new key by
// evicting a held key only once it is full at the clock's time, never a tick
// before: evicted then, its last fraction of a token would come back at
// once. At 4 per second (ticks of 1 ns), a key that took one at 0 is full
// at 250 ms: a new key is turned away 1 ns before, and admitted at 250 ms.
func TestKeyCapEvictsOnlyAKeyFullNow(t *testing.T) {
	var now int64
	l, err := gcra.New(4, time.Second, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, l.Allow("a")) // TAT 250 ms
	now = int64(250*time.Millisecond) - 1
	d := l.Take("b", 1)
	assert.False(t, d.Allowed, "a is 1 ns short of full: kept")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 3, ResetAfter: 1}, l.Take("a", 0))
	now++
	assert.True(t, l.Take("b", 1).Allowed, "a is full: evicted for b")
	assert.Equal(t, 1, l.Len())
}
