package slidinglog

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestTakeOfTwoWaitsForTheRingItRead: Take of n > 1 decides on the oldest
// entry and the n-th, loaded one after the other; it uses them only if the
// slot of the oldest still holds what it read after the n-th was loaded,
// so both come from one ring. At 2 per second, requests at 0 and 400 ms;
// at 600 ms a Refund of both marks the one at 0, then the one at 400 ms,
// racing a Take of 2. Take is allowed (both marked), or denied with 1
// left (the one at 0 marked) or with none: then it waits for the request
// at 400 ms, 800 ms. A Take that read the oldest before its mark and the
// n-th after its own would deny with none left and wait only 400 ms, for
// the request at 0: a key that never was.
func TestTakeOfTwoWaitsForTheRingItRead(t *testing.T) {
	var now atomic.Int64
	l, err := New(2, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	_, r := l.TakeReceipt("k", 1)
	require.Equal(t, 1, r.N)
	now.Store(int64(400 * time.Millisecond))
	require.True(t, l.Allow("k"))
	now.Store(int64(600 * time.Millisecond))
	r.N = 2 // both requests: the refund marks the oldest, then the next
	c, held := l.cells.Peek("k")
	require.True(t, held)
	restore := saved(c)
	rounds := limitertest.RaceRounds()
	var d hotlimit.Decision
	bad, allowed := 0, 0
	limitertest.Race(rounds,
		restore,
		func() { l.Refund("k", r) },
		func() { d = l.Take("k", 2) },
		func() int {
			switch {
			case d.Allowed:
				allowed++
				return -1
			case d.RetryAfter != 800*time.Millisecond:
				bad++
			case d.Remaining == 0:
				return 1
			}
			return 0
		})
	assert.Zero(t, bad, "denials that waited for another ring than the one they read (%d allowed in all)", allowed)
}

// TestTakeDenialCountsTheRingItRead: a Take of n > 1 denied on its n-th
// entry, with the oldest free, counts the free entries of the ring it read,
// and uses the count only if the slot of the oldest still holds what it
// read: else a claim landed meanwhile, and the count read another ring.
// At 3 per second, requests at 0, 500 and 700 ms; at 1.1 s a Take of 3
// races an Allow, which claims the free entry at 0. Take is denied either
// with 1 left and waiting 600 ms, for the request at 700 ms (before the
// claim), or with none left and waiting a whole second, for the Allow's
// (after it). A Take that counted after the claim but kept the wait of the
// ring it read before would report none left and 600 ms: a key that never
// was.
func TestTakeDenialCountsTheRingItRead(t *testing.T) {
	var now atomic.Int64
	l, err := New(3, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for _, at := range []time.Duration{0, 500 * time.Millisecond, 700 * time.Millisecond} {
		now.Store(int64(at))
		require.True(t, l.Allow("k"))
	}
	now.Store(int64(1100 * time.Millisecond))
	c, held := l.cells.Peek("k")
	require.True(t, held)
	restore := saved(c)
	rounds := limitertest.RaceRounds()
	var d hotlimit.Decision
	var ok bool
	bad := 0
	limitertest.Race(rounds,
		restore,
		func() { ok = l.Allow("k") },
		func() { d = l.Take("k", 3) },
		func() int {
			switch {
			case !ok: // the Allow passes over the entry at 0, in any order
			case d == hotlimit.Decision{Limit: 3, Remaining: 1, ResetAfter: 600 * time.Millisecond, RetryAfter: 600 * time.Millisecond}:
				return 1 // before the claim
			case d == hotlimit.Decision{Limit: 3, ResetAfter: time.Second, RetryAfter: time.Second}:
				return -1 // after it
			}
			bad++
			return 0
		})
	assert.Zero(t, bad, "rounds that matched no ring the key had")
}

// saved returns a function that puts c back as it is now: its slots, head
// and hint.
func saved(c *cell) (restore func()) {
	slots := make([]int64, len(c.slots))
	for i := range c.slots {
		slots[i] = c.slots[i].Load()
	}
	head, hint := c.head.Load(), c.hint.Load()
	return func() {
		for i := range c.slots {
			c.slots[i].Store(slots[i])
		}
		c.head.Store(head)
		c.hint.Store(hint)
	}
}
