package gcra_test

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestSweepEvictsOnlyFullKeys(t *testing.T) {
	var now atomic.Int64
	lim, err := gcra.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(2))
	require.NoError(t, err)

	require.True(t, lim.Allow("old")) // full again at 200 ms
	now.Store(int64(300 * ms))
	require.True(t, lim.Take("live", 2).Allowed) // full at 700 ms
	require.True(t, lim.Allow("one"))            // full at 500 ms
	lim.Take("reported", 0)
	require.Equal(t, 3, lim.Len())

	assert.Equal(t, 1, lim.Sweep(), "only old is full")
	assert.Equal(t, 2, lim.Len())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 2}, lim.Take("old", 0))
	assert.False(t, lim.Allow("live"), "a drained key is kept")

	now.Store(int64(500 * ms))
	assert.Equal(t, 1, lim.Sweep(), "one is full at exactly its TAT")
	now.Store(int64(700*ms) - 1)
	assert.Zero(t, lim.Sweep(), "live is 1 ns short of full")
	now.Store(int64(700 * ms))
	assert.Equal(t, 1, lim.Sweep())
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 0, ResetAfter: 400 * ms}, lim.Take("live", 2))
}

// TestSweepBetweenClockReadAndWrite: a call reads the clock while the key is
// drained, then, before it writes, the clock reaches the key's TAT and a Sweep
// evicts it. The call must not write its stale decision into a dead cell; it
// reads the clock again and decides on the key's fresh cell.
func TestSweepBetweenClockReadAndWrite(t *testing.T) {
	for _, viaTake := range []bool{false, true} {
		var now atomic.Int64
		var lim *gcra.Limiter
		var hook atomic.Bool
		clock := func() int64 {
			if hook.CompareAndSwap(true, false) {
				stale := now.Load()
				now.Store(int64(time.Second))
				require.Equal(t, 1, lim.Sweep())
				return stale
			}
			return now.Load()
		}
		var err error
		lim, err = gcra.New(2, time.Second, hotlimit.WithClock(clock))
		require.NoError(t, err)
		require.True(t, lim.Take("k", 1).Allowed) // TAT 500 ms
		now.Store(int64(100 * ms))
		hook.Store(true)
		if viaTake {
			assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms},
				lim.Take("k", 1), "Take: decided at 1 s on the fresh cell")
		} else {
			assert.True(t, lim.Allow("k"))
		}
		assert.False(t, hook.Load(), "the hook ran")
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * ms},
			lim.Take("k", 0), "take=%t: one admission at 1 s on the fresh cell", viaTake)
		assert.Equal(t, 1, lim.Len())
	}
}

// TestSweepRacingAllowLosesNothing: goroutines drain keys at a frozen clock
// while a sweeper loops; then the clock moves by exactly one token and the
// workers race the sweeper again. In even rounds the sweeper evicts the
// keys before the workers start, so they revive them. No admission is lost (the drained keys are
// never evicted, so exactly one more passes per key) and none is duplicated.
func TestSweepRacingAllowLosesNothing(t *testing.T) {
	const (
		goroutines = 16
		limit      = 10
	)
	rounds := 40
	if testing.Short() {
		rounds = 10
	}
	keys := []string{"a", "b", "c", "d", "e"}
	var now atomic.Int64
	lim, err := gcra.New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	stop := make(chan struct{})
	sw, swept := limitertest.SweepUntil(lim, stop)
	hammer := func() []int64 {
		got := make([]atomic.Int64, len(keys))
		var wg sync.WaitGroup
		for g := range goroutines {
			wg.Go(func() {
				for i := range 4 * limit {
					k := (g + i) % len(keys)
					if lim.Allow(keys[k]) {
						got[k].Add(1)
					}
				}
			})
		}
		wg.Wait()
		out := make([]int64, len(keys))
		for k := range got {
			out[k] = got[k].Load()
		}
		return out
	}
	for round := range rounds {
		now.Add(int64(time.Hour)) // every key full: the sweeper may evict them
		if round%2 == 0 {
			// Let the sweeper evict them first: the next calls revive.
			// Waited for, not timed: a loaded machine may leave the
			// sweeper without a core for a while, and a round that began
			// before it evicted would not be the round the test means.
			// The 30 s only ends a run whose sweeper never evicts.
			for deadline := time.Now().Add(30 * time.Second); lim.Len() > 0; {
				require.True(t, time.Now().Before(deadline), "round %d: the sweeper evicted no full key", round)
				runtime.Gosched()
			}
		}
		for k, n := range hammer() {
			assert.EqualValues(t, limit, n, "round %d key %s: a full burst", round, keys[k])
		}
		now.Add(int64(100 * ms)) // exactly one token
		for k, n := range hammer() {
			assert.EqualValues(t, 1, n, "round %d key %s: one token", round, keys[k])
		}
	}
	close(stop)
	sw.Wait()
	assert.Positive(t, swept.Load(), "the sweeper raced the workers")
}

// TestWithAutoSweep: a stream of new keys stays bounded when the limiter
// sweeps itself, and a hot key's decisions are unchanged.
func TestWithAutoSweep(t *testing.T) {
	var now atomic.Int64
	lim, err := gcra.New(1, ms, hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(64))
	require.NoError(t, err)
	peak := 0
	for i := range 5000 {
		now.Add(int64(ms))
		require.True(t, lim.Allow("hot"), "step %d", i)
		require.False(t, lim.Allow("hot"), "step %d", i)
		require.True(t, lim.Allow(strconv.Itoa(i)), "step %d", i)
		peak = max(peak, lim.Len())
	}
	assert.LessOrEqual(t, peak, 64+16, "the threshold, plus the insertions between two steps of the sweep")

	plain, err := gcra.New(1, ms, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i := range 200 {
		now.Add(int64(ms))
		plain.Allow(strconv.Itoa(i))
	}
	assert.Equal(t, 200, plain.Len(), "off by default")
}
