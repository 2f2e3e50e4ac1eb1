package slidinglog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestRefundWhoseMarkLosesToAnotherRefundKeepsItsReading: a Refund whose
// CAS on the oldest counted entry loses to another refund's mark of that
// same entry goes on to the next counted entry, at its own clock reading:
// a mark moves no request, so it sends no Refund back to read the ring and
// the clock again. At 3 per second, requests at 0 s, 0.5 s and 0.6 s, the
// first two with their receipts; at 0.9 s the first Refund, of the request
// at 0 s, loads that request's slot to mark it, and before its CAS the
// second Refund, of the request at 0.5 s, marks it (the oldest counted) and
// the clock moves to 1.1 s. At 0.9 s the first Refund's request is in the
// window: it marks the next oldest counted, at 0.5 s, and at 1.1 s two
// requests pass. (Read again at 1.1 s, its request would have left the
// window, and it would give nothing back.)
func TestRefundWhoseMarkLosesToAnotherRefundKeepsItsReading(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
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
	l.markHook = func() {
		l.markHook = nil
		l.Refund("k", r1) // at 0.9 s: marks the request at 0 s, the oldest counted
		clock.Now.Store(sec(1.1))
		ran = true
	}
	l.Refund("k", r0)
	require.True(t, ran, "the second Refund ran between the first one's load and its CAS")
	assert.Equal(t, 2, l.Take("k", 0).Remaining, "at 1.1 s: the requests at 0 s (expired) and 0.5 s (refunded) are free")
}
