package slidinglog_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestCappedRetryAfterIsNeverPastTheClocksEnd: a new key that
// hotlimit.WithMaxKeys turns away waits for a held key to go idle. When the
// held key's requests leave its window only after the limiter's time stops
// (at the clock's last reading, math.MaxInt64, or before), that never
// happens: the denial says Never, as the held key's ResetAfter does, not a
// wait the clock cannot reach.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	for _, epoch := range []int64{math.MaxInt64 - int64(time.Millisecond), 0} {
		var now atomic.Int64
		now.Store(epoch)
		lim, err := slidinglog.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1))
		require.NoError(t, err)
		now.Store(math.MaxInt64 - int64(time.Millisecond))
		held := lim.Take("a", 1)
		require.True(t, held.Allowed)
		require.Equal(t, hotlimit.Never, held.ResetAfter, "epoch %d: the held key never resets", epoch)
		d := lim.Take("b", 1)
		assert.False(t, d.Allowed, "epoch %d: the cap turns the new key away", epoch)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "epoch %d: no held key goes idle before the clock's end", epoch)
		assert.False(t, lim.Allow("b"), "epoch %d", epoch)
	}
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
