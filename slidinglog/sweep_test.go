package slidinglog_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

func TestSweepEvictsOnlyIdleKeys(t *testing.T) {
	lim, clock := newAt(t, 3, time.Second)
	clock.setMs(500)
	require.True(t, lim.Allow("old"))
	clock.setMs(1400)
	require.True(t, lim.Take("live", 3).Allowed)
	require.True(t, lim.Allow("recent"))
	lim.Take("reported", 0)
	require.Equal(t, 3, lim.Len())

	clock.setMs(1500)
	assert.Equal(t, 1, lim.Sweep(), "only old's request, at exactly now − Window, has left the window")
	assert.Equal(t, 2, lim.Len())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("old", 0))
	assert.False(t, lim.Allow("live"), "a full log is kept")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 900 * time.Millisecond},
		lim.Take("recent", 0))

	clock.setMs(2400)
	assert.Equal(t, 2, lim.Sweep())
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: time.Second}, lim.Take("live", 3))
}

// TestSweepBetweenClockReadAndWrite: a call reads the clock while the log is
// full, then, before it writes, the clock moves a window on and a Sweep evicts
// the key. The call must not log at its stale time on the key's fresh cell;
// it reads the clock again.
func TestSweepBetweenClockReadAndWrite(t *testing.T) {
	const limit = 3
	for _, viaTake := range []bool{false, true} {
		var now atomic.Int64
		var lim *slidinglog.Limiter
		var hook atomic.Bool
		clock := func() int64 {
			if hook.CompareAndSwap(true, false) {
				stale := now.Load()
				now.Store(int64(1500 * time.Millisecond))
				require.Equal(t, 1, lim.Sweep())
				return stale
			}
			return now.Load()
		}
		var err error
		lim, err = slidinglog.New(limit, time.Second, hotlimit.WithClock(clock))
		require.NoError(t, err)
		now.Store(int64(200 * time.Millisecond))
		require.True(t, lim.Take("k", limit).Allowed)
		hook.Store(true)
		if viaTake {
			assert.True(t, lim.Take("k", 1).Allowed)
		} else {
			assert.True(t, lim.Allow("k"))
		}
		assert.False(t, hook.Load(), "the hook ran")
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit - 1, ResetAfter: time.Second},
			lim.Take("k", 0), "take=%t: logged at 1.5 s", viaTake)
	}
}

// TestWithAutoSweep: a stream of new keys, one window each, stays bounded
// when the limiter sweeps itself, and a hot key's decisions are unchanged.
func TestWithAutoSweep(t *testing.T) {
	lim, clock := newAt(t, 1, time.Millisecond)
	auto, err := slidinglog.New(1, time.Millisecond, hotlimit.WithClock(clock.Load), hotlimit.WithAutoSweep(64))
	require.NoError(t, err)
	peak := 0
	for i := range 5000 {
		clock.Add(ms)
		require.True(t, auto.Allow("hot"), "step %d", i)
		require.False(t, auto.Allow("hot"), "step %d", i)
		require.True(t, auto.Allow(strconv.Itoa(i)), "step %d", i)
		peak = max(peak, auto.Len())
		lim.Allow(strconv.Itoa(i))
	}
	assert.LessOrEqual(t, peak, 64+16, "the threshold, plus the insertions between two steps of the sweep")
	assert.Equal(t, 5000, lim.Len(), "off by default")
}
