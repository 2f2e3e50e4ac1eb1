package slidinglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestFreeStillSeesTheRingMoveOn forces, under a frozen clock, a denial's
// count of the free entries made after other claims moved the head on. It
// takes admit's steps itself, as no clock read or other hook lies between
// admit's head read and its count; freeStill, which the denials of admit,
// take and decide count with, must report that the ring moved. Caller A
// reads head h = 8 with the ring full and is denied; then a Refund of 3
// frees the three oldest entries, two claims take two of them (head 10),
// and a Refund of 1 frees one more: the free counts over A's call are 0, 3,
// 2, 1, 2. Counted from A's stale head, the ring reads as two new claims in
// front of two refunded entries and four counted ones, whose end is 4 from
// a hint at 2 or more and 0 from a hint below: a count that no moment of
// the call had, and that depends on the hint. The count a denial reports
// must be one the ring had: A counts, then finds head or its slot moved,
// and decides again.
func TestFreeStillSeesTheRingMoveOn(t *testing.T) {
	for _, hint := range []uint64{0, 1<<1 | hintCount, 2<<1 | hintCount, 4<<1 | hintCount, 6<<1 | hintCount, (8 + 4) << 1} {
		l, now := newTest(t, 8)
		now.Store(int64(time.Hour)) // frozen
		for range 8 {
			require.True(t, l.Allow("k"))
		}
		c := l.cells.Get("k")
		// A's reads, as admit makes them: head h, the slot under it, denied.
		s, ok := c.read()
		require.True(t, ok)
		require.Equal(t, uint64(8), s.h)
		tA := max(now.Load(), s.newest)
		_, claim := claimable(s.v, tA, l.window)
		require.False(t, claim, "A is denied: the ring is full")

		// Meanwhile: refund 3, two claims, refund 1.
		l.Refund("k", hotlimit.Receipt{N: 3, At: now.Load()})
		require.True(t, l.Allow("k"))
		require.True(t, l.Allow("k"))
		l.Refund("k", hotlimit.Receipt{N: 1, At: now.Load()})
		s2, ok := c.read()
		require.True(t, ok)
		require.Equal(t, uint64(10), s2.h)
		require.Equal(t, 2, l.Take("k", 0).Remaining, "two free now")

		// A counts, as admit does on its denial, with the hint of the moment.
		c.hint.Store(hint)
		free, ok := l.freeStill(c, s.h, s.i, s.v, tA)
		if ok {
			assert.LessOrEqual(t, free, uint64(3), "hint %#x: the count of a ring A's call never saw", hint)
		}
		assert.False(t, ok, "hint %#x: head moved during A's call, and A must decide again", hint)
	}
}
