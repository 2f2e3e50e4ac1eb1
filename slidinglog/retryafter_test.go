package slidinglog_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestRetryAfterOfSeveralCountsNothing: RetryAfter(key, n) tells how long
// Take(key, n) waits, by the n-th oldest of the last Limit requests, with
// a refunded one free, and changes nothing: the Takes that follow decide as
// if it had never been asked, and a key it is asked about is not inserted.
func TestRetryAfterOfSeveralCountsNothing(t *testing.T) {
	lim, clock := newAt(t, 3, 10*time.Second)
	assert.Zero(t, lim.RetryAfter("k", 3), "a key not held")
	assert.Zero(t, lim.Len(), "RetryAfter inserts no key")
	assert.Equal(t, hotlimit.Never, lim.RetryAfter("k", 4), "n > limit")
	assert.Equal(t, hotlimit.Never, lim.RetryAfter("k", -1), "n < 0")

	require.True(t, lim.Allow("k")) // at 0 s
	clock.Add(int64(2 * time.Second))
	_, r := lim.TakeReceipt("k", 1) // at 2 s
	require.Equal(t, 1, r.N)
	clock.Add(int64(2 * time.Second))
	require.True(t, lim.Allow("k")) // at 4 s: the log is full
	for _, step := range []struct {
		n    int
		want time.Duration
	}{
		{0, 0},
		{1, 6 * time.Second},  // the request at 0 s leaves at 10 s
		{2, 8 * time.Second},  // and the one at 2 s at 12 s
		{3, 10 * time.Second}, // and the one at 4 s at 14 s
		{1, 6 * time.Second},  // asking changed nothing
	} {
		assert.Equal(t, step.want, lim.RetryAfter("k", step.n), "RetryAfter(k, %d)", step.n)
		if step.n > 0 {
			assert.Equal(t, step.want, lim.Take("k", step.n).RetryAfter, "Take(k, %d)", step.n)
		}
	}

	lim.Refund("k", r) // frees the oldest counted request, at 0 s
	assert.Zero(t, lim.RetryAfter("k", 1))
	assert.Equal(t, 8*time.Second, lim.RetryAfter("k", 2), "the request at 2 s")
	clock.Add(int64(8*time.Second) - 1)
	assert.Equal(t, time.Nanosecond, lim.RetryAfter("k", 2))
	assert.False(t, lim.Take("k", 2).Allowed, "1 ns before RetryAfter")
	clock.Add(1)
	assert.Zero(t, lim.RetryAfter("k", 2))
	assert.True(t, lim.Take("k", 2).Allowed, "at RetryAfter")
	assert.Equal(t, 1, lim.Len())
}

// TestRetryAfterRacingAClaimReadsTheRingAgain forces a claim between
// RetryAfter's read of the ring and its read of the entries: at its clock
// reading, the oldest request leaves the window and another request takes
// its slot. The entries it then reads belong to a later ring than the one
// it read; it reads the ring, and the clock, again, and tells the wait of
// the log as it is: until the request at 1 s leaves, not the new one.
func TestRetryAfterRacingAClaimReadsTheRingAgain(t *testing.T) {
	var clock limitertest.HookClock
	lim, err := slidinglog.New(2, 10*time.Second, hotlimit.WithClock(clock.Read))
	require.NoError(t, err)
	require.True(t, lim.Allow("k")) // at 0 s
	clock.Now.Add(int64(time.Second))
	require.True(t, lim.Allow("k")) // at 1 s: the log is full
	clock.Now.Add(int64(4 * time.Second))
	raced := false
	clock.Hook = func() {
		clock.Now.Store(int64(10 * time.Second))
		raced = lim.Allow("k") // over the request at 0 s, left at 10 s
	}
	assert.Equal(t, time.Second, lim.RetryAfter("k", 1), "until the request at 1 s leaves")
	require.True(t, raced, "a claim landed at RetryAfter's clock reading")
}

// TestRetryAfterAllocatesNothing: asking a key held, or one not held,
// allocates nothing.
func TestRetryAfterAllocatesNothing(t *testing.T) {
	lim, clock := newAt(t, 3, 10*time.Second)
	for range 3 {
		require.True(t, lim.Allow("k"))
	}
	clock.Add(int64(time.Second))
	require.Equal(t, 9*time.Second, lim.RetryAfter("k", 2))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.RetryAfter("k", 2) }), "a key held")
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.RetryAfter("other", 2) }), "a key not held")
}

// TestRetryAfterUnderConcurrentClaims asks RetryAfter(k, n) for every n
// while other goroutines fill the key's log under a frozen clock, for the
// race detector: every request is logged then, so the only waits are 0 and
// Window, each one the key had during the call. A wait of 0 needs room for
// n when the call began (at most Limit − n requests admitted before it),
// a wait of Window that many requests made before it ended. (A claim
// landing between RetryAfter's reads is forced, one at a time, by
// TestRetryAfterRacingAClaimReadsTheRingAgain.)
func TestRetryAfterUnderConcurrentClaims(t *testing.T) {
	const limit, window = 7, 10 * time.Second
	rounds := 300
	if testing.Short() {
		rounds = 30
	}
	for round := range rounds {
		lim, clock := newAt(t, limit, window)
		clock.Store(int64(time.Hour))
		var started, admitted atomic.Int64
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for range limit {
					started.Add(1)
					if lim.Allow("k") {
						admitted.Add(1)
					}
				}
			})
		}
		for k := 0; admitted.Load() < limit; k++ {
			n := 1 + k%limit
			before := admitted.Load()
			w := lim.RetryAfter("k", n)
			after := started.Load()
			switch w {
			case 0:
				require.LessOrEqual(t, before, int64(limit-n), "round %d: RetryAfter(k, %d) = 0 after %d admitted", round, n, before)
			case window:
				require.GreaterOrEqual(t, after, int64(limit-n+1), "round %d: RetryAfter(k, %d) = Window before %d made", round, n, after)
			default:
				require.Failf(t, "a wait no ring holds", "round %d: RetryAfter(k, %d) = %v", round, n, w)
			}
		}
		wg.Wait()
		require.Equal(t, int64(limit), admitted.Load(), "round %d", round)
		require.Equal(t, window, lim.RetryAfter("k", 1), "round %d", round)
	}
}
