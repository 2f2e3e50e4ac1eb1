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

// TestReportSeesAClaimLandUnderTheHead forces a claim that lands on the
// head's slot while a report counts, and whose head advance is still to
// come: head alone has not moved, so only the head's slot tells the report
// that the ring it counts is not the one it read. At 4 per second, two
// requests at 1 s and two at 1.5 s; at 2.2 s the report reads head 4, then
// the clock, inside which claim 4 lands in slot 0 at 2.2 s, head still 4.
// Before it the key had 2 left, reset 300 ms later; after it, 1 left, reset
// a second later. Counted from head 4, slot 0 reads as a counted entry in
// front of an expired one, a ring that never was: from a hint that starts
// the search there, none left. Whatever the hint, the report must give the
// key's state before the claim or after it.
func TestReportSeesAClaimLandUnderTheHead(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	before := hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 2, ResetAfter: 300 * time.Millisecond}
	after := hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 1, ResetAfter: time.Second}
	for _, hint := range []uint64{0, 1<<1 | hintCount, 2<<1 | hintCount, 3<<1 | hintCount, 6 << 1} {
		var clock limitertest.HookClock
		l, err := New(4, time.Second, hotlimit.WithClock(clock.Read))
		require.NoError(t, err)
		clock.Now.Store(sec(1))
		require.True(t, l.Allow("k"))
		require.True(t, l.Allow("k"))
		clock.Now.Store(sec(1.5))
		require.True(t, l.Allow("k"))
		require.True(t, l.Allow("k"))
		c, ok := l.cells.Peek("k")
		require.True(t, ok)
		require.Equal(t, uint64(4), c.head.Load())

		clock.Now.Store(sec(2.2))
		c.hint.Store(hint)
		landed := false
		clock.Hook = func() {
			// Claim 4, round 1, at 2.2 s: slot 0 now holds it, head is 4.
			v := c.load(0)
			landed = c.cas(0, v, packed.PackStamp(l.clamp(sec(2.2)), 1))
		}
		d := l.Take("k", 0)
		require.True(t, landed, "hint %#x: the claim landed inside the report", hint)
		require.Equal(t, uint64(4), c.head.Load(), "hint %#x: its head advance is still to come", hint)
		assert.Contains(t, []hotlimit.Decision{before, after}, d, "hint %#x: the key before the claim, or after it", hint)
	}
}
