package slidinglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestTakeDeniedAfterALaterRefundStillResets forces a Take of 2 that reads
// the clock, then stalls while a Refund reads a later one: at 3 per second,
// requests at 0 s, 0.5 s and 0.9 s (the last one's receipt kept); the Take
// reads 1.2 s, and inside its reading the Refund, at 1.6 s, finds the first
// two out of the window and marks the third. At 1.2 s the first has left the
// window and the second counts, so the Take is denied, until the second
// leaves (0.3 s), and the key is back to its full quota only when the newest
// request, at 0.9 s, leaves too (0.7 s), refunded or not. Its free entries
// are no prefix of the ring (the first and the third), so a count of them
// from a hint near the third can find all three; the denial must still
// report one single request left, and the wait for the newest.
func TestTakeDeniedAfterALaterRefundStillResets(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for _, hint := range []uint64{0, 1<<1 | hintCount, 2<<1 | hintCount, 3<<1 | hintCount, 5 << 1, 6 << 1} {
		var clock limitertest.HookClock
		l, err := New(3, time.Second, hotlimit.WithClock(clock.Read))
		require.NoError(t, err)
		require.True(t, l.Allow("k"))
		clock.Now.Store(sec(0.5))
		require.True(t, l.Allow("k"))
		clock.Now.Store(sec(0.9))
		d, r := l.TakeReceipt("k", 1)
		require.True(t, d.Allowed)

		clock.Now.Store(sec(1.2))
		c, ok := l.cells.Peek("k")
		require.True(t, ok)
		c.hint.Store(hint)
		refunded := false
		clock.Hook = func() {
			clock.Now.Store(sec(1.6))
			l.Refund("k", r)
			refunded = packed.IsRefunded(c.load(2)) // the third entry, slot 2
		}
		d = l.Take("k", 2)
		require.True(t, refunded, "hint %#x: the refund marked the third entry inside the Take's reading", hint)
		assert.False(t, d.Allowed, "hint %#x", hint)
		assert.Equal(t, 300*time.Millisecond, d.RetryAfter, "hint %#x: until the second leaves", hint)
		assert.Equal(t, 700*time.Millisecond, d.ResetAfter, "hint %#x: until the newest leaves", hint)
		assert.Equal(t, 1, d.Remaining, "hint %#x: one single request passes, on the first entry; the second counts", hint)
	}
}
