package tokenbucket

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestSweepJudgesAKeyInsertedButNotYetListed: a new key is in the map
// before it is in the sweep list, and an insertion that pays an auto-sweep
// step reads the clock in between. Stalled there, it lets another caller
// take the new key's only token, the clock jump one and a half Ranges, and a
// Sweep record its time as the generation. The sweep must judge the new
// key's word too: left unread, its timestamp lies outside the new
// generation's bounds, and, 2^(T−1) units or more behind the clock, reads as
// a clock step back that refills nothing. The stalled insertion, going on,
// then found the key of 1 per second empty, idle for weeks.
func TestSweepJudgesAKeyInsertedButNotYetListed(t *testing.T) {
	lim, clock, rng := beforeAStep(t)
	stalled, jumped := false, int64(0)
	clock.Hook = func() {
		_, held := lim.cells.Peek("new")
		stalled = held
		assert.True(t, lim.Allow("new"), "the new key's first request")
		jumped = clock.Now.Add(rng + rng/2)
		lim.Sweep()
	}
	got := lim.Allow("new") // stalls in its auto-sweep step's reading
	require.True(t, stalled, "the insertion's reading came after the key was in the map")
	require.Equal(t, jumped, lim.swept.Load(), "the sweep recorded its time")
	assert.True(t, got, "a key idle for %v refills its token", time.Duration(rng+rng/2))
}

// beforeAStep returns a limiter of 1 per second, on clock, whose next
// insertion pays an auto-sweep step, and its Range: eleven keys, the ten
// insertions after the first, into a map at the threshold, owe the
// auto-sweep 30 visits, so the next one completes a chunk of 32 and pays a
// walk, whose clock reading comes after the new key is in the map and
// before it is listed.
func beforeAStep(t *testing.T) (lim *Limiter, clock *limitertest.HookClock, rng int64) {
	t.Helper()
	clock = new(limitertest.HookClock)
	lim, err := New(1, time.Second, hotlimit.WithClock(clock.Read), hotlimit.WithAutoSweep(1))
	require.NoError(t, err)
	clock.Now.Store(int64(time.Second))
	for i := range 11 {
		require.True(t, lim.Allow("k"+strconv.Itoa(i)))
	}
	return lim, clock, int64(lim.b.Range())
}

// TestSweepCountsAKeyInsertedButNotYetListed: a Sweep that evicts a key
// still being inserted (in the map, not yet on the sweep list, see
// TestSweepJudgesAKeyInsertedButNotYetListed) counts it among the keys it
// returns, as it counts the listed ones, and Len agrees with it.
func TestSweepCountsAKeyInsertedButNotYetListed(t *testing.T) {
	lim, clock, rng := beforeAStep(t)
	stalled, evicted, left := false, 0, -1
	clock.Hook = func() {
		clock.Hook = nil
		_, held := lim.cells.Peek("new")
		stalled = held
		clock.Now.Add(rng + rng/2) // every key is full again
		evicted = lim.Sweep()
		left = lim.Len()
	}
	lim.Allow("new") // stalls in its auto-sweep step's reading
	require.True(t, stalled, "the insertion's reading came after the key was in the map")
	assert.Equal(t, 12, evicted, "the eleven listed keys and the one not yet listed")
	assert.Equal(t, 0, left)
}
