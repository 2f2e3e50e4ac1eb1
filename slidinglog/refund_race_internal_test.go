package slidinglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestRefundRacedByAnotherRefundKeepsItsReading: a Refund reads the ring,
// then the clock, then marks the oldest counted entry by CAS. Another
// Refund that marks that entry in between, inside the first one's clock
// reading or between its load of the entry and its CAS, moves no request,
// so the first one goes on at its own reading, as with no other call
// meanwhile: it marks the next oldest counted entry. At 3 per second,
// requests at 0 s, 0.5 s and 0.6 s, the first two with their receipts; the
// first Refund, of the request at 0 s, reads 0.9 s, and at the stall the
// second, of the one at 0.5 s, marks the request at 0 s (the oldest
// counted) and the clock moves to 1.1 s. At 0.9 s the first Refund's
// request is in the window: it marks the request at 0.5 s, and at 1.1 s two
// requests pass. (Read again at 1.1 s, its request would have left the
// window, and it would give nothing back.)
func TestRefundRacedByAnotherRefundKeepsItsReading(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for _, stall := range []string{"reading", "mark"} {
		t.Run("at="+stall, func(t *testing.T) {
			var clock limitertest.HookClock
			l, err := New(3, time.Second, hotlimit.WithClock(clock.Read))
			require.NoError(t, err)
			_, r0 := l.TakeReceipt("k", 1)
			require.Equal(t, 1, r0.N)
			clock.Now.Store(sec(0.5))
			_, r1 := l.TakeReceipt("k", 1)
			require.Equal(t, 1, r1.N)
			clock.Now.Store(sec(0.6))
			require.True(t, l.Allow("k"))

			clock.Now.Store(sec(0.9))
			ran := false
			second := func() {
				l.Refund("k", r1) // at 0.9 s: marks the request at 0 s, the oldest counted
				clock.Now.Store(sec(1.1))
				ran = true
			}
			switch stall {
			case "reading": // run by the first Refund's clock reading
				clock.Hook = second
			case "mark": // between the first Refund's load of the entry and its CAS
				l.markHook = func() {
					l.markHook = nil
					second()
				}
			}
			l.Refund("k", r0)
			require.True(t, ran, "the second Refund ran at the first one's %s", stall)
			assert.Equal(t, 2, l.Take("k", 0).Remaining, "at 1.1 s: the requests at 0 s (expired) and 0.5 s (refunded) are free")
		})
	}
}

// TestRefundBeyondTheLimitGivesBackAtMostTheLimitAcrossPasses: a receipt
// for more requests than the limit (no Take makes one, but a Receipt is a
// plain value) gives back at most the limit, even when a claim lands during
// the refund and sends it to a new pass, which marks what is left to give
// back: the limit less what the first pass marked, not r.N less it. At 3 per
// second, frozen at 0: three requests; a refund of 5 marks the oldest, and
// between its load of the second and its CAS a request passes over the
// first's refunded slot. The first pass marks the second, then sees the
// claim and starts over with one left: it marks the third, and the request
// that passed meanwhile still counts: 2 remain. (Counting from 5, the new
// pass would mark that request too and leave 3: one more than any real
// undoing of the three requests allows.)
func TestRefundBeyondTheLimitGivesBackAtMostTheLimitAcrossPasses(t *testing.T) {
	var clock limitertest.HookClock
	l, err := New(3, time.Second, hotlimit.WithClock(clock.Read))
	require.NoError(t, err)
	d, r := l.TakeReceipt("k", 3)
	require.True(t, d.Allowed)
	r.N = 5 // beyond the limit

	marks, passed := 0, false
	l.markHook = func() {
		if marks++; marks == 2 { // before the CAS that marks the second request
			l.markHook = nil
			passed = l.Allow("k") // over the first request's refunded slot
		}
	}
	l.Refund("k", r)
	require.True(t, passed, "a request passed during the refund, over the first refunded entry")
	assert.Equal(t, 2, l.Take("k", 0).Remaining, "the refund gave back 3 (the limit), and the request that passed meanwhile counts")
}
