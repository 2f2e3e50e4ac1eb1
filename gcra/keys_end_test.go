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
