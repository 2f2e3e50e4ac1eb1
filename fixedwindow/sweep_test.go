package fixedwindow_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
)

func TestSweepEvictsOnlyIdleKeys(t *testing.T) {
	var now atomic.Int64
	lim, err := fixedwindow.New(3, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)

	now.Store(int64(500 * ms))
	require.True(t, lim.Allow("old")) // window 0
	now.Store(int64(5500 * ms))
	require.True(t, lim.Allow("future")) // window 5
	now.Store(int64(2500 * ms))          // back to window 2
	require.True(t, lim.Take("live", 3).Allowed)
	require.True(t, lim.Allow("future")) // counted in window 5
	lim.Take("reported", 0)
	require.Equal(t, 3, lim.Len())

	assert.Equal(t, 1, lim.Sweep(), "only the ended window 0 is idle")
	assert.Equal(t, 2, lim.Len())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("old", 0))
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 3500 * ms},
		lim.Take("future", 0), "a later window is kept")
	assert.False(t, lim.Allow("live"), "a full current window is kept")

	now.Store(int64(6 * time.Second))
	assert.Equal(t, 2, lim.Sweep())
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Second}, lim.Take("live", 1))
}

// TestSweepBetweenClockReadAndWrite: a call reads the clock in a full window,
// then, before it writes, the clock reaches the next window and a Sweep
// evicts the key. The call must not count in the full window on the key's
// fresh cell; it reads the clock again and counts in the new window.
func TestSweepBetweenClockReadAndWrite(t *testing.T) {
	const limit = 3
	for _, viaTake := range []bool{false, true} {
		var now atomic.Int64
		var lim *fixedwindow.Limiter
		var hook atomic.Bool
		clock := func() int64 {
			if hook.CompareAndSwap(true, false) {
				stale := now.Load()
				now.Store(int64(1500 * ms))
				require.Equal(t, 1, lim.Sweep())
				return stale
			}
			return now.Load()
		}
		var err error
		lim, err = fixedwindow.New(limit, time.Second, hotlimit.WithClock(clock))
		require.NoError(t, err)
		now.Store(int64(200 * ms))
		// Window 0 holds limit−1: the stale reading admits, the CAS finds
		// the tombstone, and the call starts over on the fresh cell.
		require.True(t, lim.Take("k", limit-1).Allowed)
		hook.Store(true)
		if viaTake {
			assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit - 1, ResetAfter: 500 * ms},
				lim.Take("k", 1), "Take: counted in window 1")
		} else {
			assert.True(t, lim.Allow("k"))
		}
		assert.False(t, hook.Load(), "the hook ran")
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit - 1, ResetAfter: 500 * ms},
			lim.Take("k", 0), "take=%t: window 1 holds the call", viaTake)
	}
}

// TestWithAutoSweep: a stream of new keys, one window each, stays bounded
// when the limiter sweeps itself, and a hot key's decisions are unchanged.
func TestWithAutoSweep(t *testing.T) {
	var now atomic.Int64
	lim, err := fixedwindow.New(1, ms, hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(64))
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
	assert.LessOrEqual(t, lim.Len(), 64+16)

	// Off by default: nothing is evicted.
	plain, err := fixedwindow.New(1, ms, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i := range 200 {
		now.Add(int64(ms))
		plain.Allow(strconv.Itoa(i))
	}
	assert.Equal(t, 200, plain.Len())
}
