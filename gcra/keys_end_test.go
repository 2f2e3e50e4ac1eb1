package gcra_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
)

// TestCappedRetryAfterIsNeverPastTheClocksEnd: a new key that
// hotlimit.WithMaxKeys turns away waits for a held key to go idle. When the
// held key is full again only after the clock's last reading
// (math.MaxInt64), that never happens: the denial says Never, as the held
// key's ResetAfter does, not a wait the clock cannot reach.
func TestCappedRetryAfterIsNeverPastTheClocksEnd(t *testing.T) {
	for _, epoch := range []int64{math.MaxInt64 - int64(time.Millisecond), 0} {
		var now atomic.Int64
		now.Store(epoch)
		lim, err := gcra.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1))
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

// TestCappedRetryAfterCountsFromAClockBehindTheEpoch: at 5 per second, a
// clock 3 s behind the epoch refills nothing until it is back there, so a
// key drained at that reading is full again 3 s + 1 s later, and a new key
// that hotlimit.WithMaxKeys turns away is told to wait that long, as the
// held key's own ResetAfter says, not the 1 s a drained key takes to fill.
func TestCappedRetryAfterCountsFromAClockBehindTheEpoch(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Second))
	lim, err := gcra.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1))
	require.NoError(t, err)
	now.Store(int64(7 * time.Second)) // 3 s behind the epoch
	held := lim.Take("a", 5)
	require.True(t, held.Allowed)
	require.Equal(t, 4*time.Second, held.ResetAfter, "the held key is full 3 s + 1 s later")
	d := lim.Take("b", 1)
	assert.False(t, d.Allowed, "the cap turns the new key away")
	assert.Equal(t, 4*time.Second, d.RetryAfter, "the held key goes idle 3 s + 1 s later")
}
