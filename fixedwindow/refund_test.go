package fixedwindow

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestRefundScript: a refund in the Take's window restores the count
// exactly; after the window ended it gives nothing back.
func TestRefundScript(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10*time.Second) + 1)
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)

	d, r := lim.TakeReceipt("k", 3)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 3, At: now.Load()}, r)
	now.Add(int64(500 * time.Millisecond))
	lim.Refund("k", r)
	assert.Equal(t, 5, lim.Take("k", 0).Remaining, "restored exactly")
	assert.Zero(t, lim.Take("k", 0).ResetAfter)

	_, r = lim.TakeReceipt("k", 5)
	require.Equal(t, 5, r.N)
	_, r2 := lim.TakeReceipt("k", 1)
	assert.Zero(t, r2, "denied: the zero receipt")
	lim.Refund("k", r2)
	lim.Refund("k", hotlimit.Receipt{N: -3, At: r.At})
	assert.Zero(t, lim.Take("k", 0).Remaining)
	lim.Refund("k", hotlimit.Receipt{N: 2, At: r.At})
	assert.Equal(t, 2, lim.Take("k", 0).Remaining)

	// The next window: the old count no longer counts; a refund of it gives
	// nothing back, and does not touch the new window's count.
	now.Add(int64(time.Second))
	_, r3 := lim.TakeReceipt("k", 4)
	require.Equal(t, 4, r3.N)
	lim.Refund("k", r)
	assert.Equal(t, 1, lim.Take("k", 0).Remaining)
	lim.Refund("k", hotlimit.Receipt{N: 100, At: r3.At}) // made up: not below zero
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, lim.Take("k", 0))
	assert.Zero(t, lim.Len(), "the refund that emptied the key evicted it")
	lim.Refund("nobody", r3)
	assert.Zero(t, lim.Len(), "Refund inserts no key")
}

// TestRefundBehindClock: a Take whose clock read behind the key's window
// counts in that window, and its receipt says so: the refund finds it.
func TestRefundBehindClock(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Second))
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	now.Add(-int64(1500 * time.Millisecond)) // back into window 8
	d, r := lim.TakeReceipt("k", 2)
	require.True(t, d.Allowed)
	assert.Equal(t, int64(10*time.Second), r.At, "counted at window 10's start")
	lim.Refund("k", r)
	assert.Equal(t, 4, lim.Take("k", 0).Remaining)
}

// TestRefundBehindClockAtTheEnds: a Take whose clock stepped back behind
// the key's window at the ends of int64 counts in that window, and its
// receipt names the window's start, so the refund finds the requests (see
// limitertest.RefundsBehindAStepBack).
func TestRefundBehindClockAtTheEnds(t *testing.T) {
	limitertest.RefundsBehindAStepBack(t, limitertest.Adapt(New))
}

// TestRefundFrozenHammer: concurrent takes and refunds on one key pass the
// limit plus the refunds, never holding out more than the limit (see
// limitertest).
func TestRefundFrozenHammer(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 100} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			lim, err := New(limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
			require.NoError(t, err)
			limitertest.RefundHammer(t, lim, limit, 3, true)
		})
	}
}

func TestRefundAllocs(t *testing.T) {
	lim, err := New(100, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
	require.NoError(t, err)
	limitertest.RefundAllocs(t, lim)
}

// TestRefundOfAReceiptAWrapOldGivesNothing: a receipt taken 2^42 windows
// before the refund names a window whose index, kept modulo 2^42 in the word,
// is the current one's; its requests weigh on nothing any more (the key was
// swept since), so the refund must not lower the current window's count,
// which holds other requests: the key would then admit more than its limit
// in that window.
func TestRefundOfAReceiptAWrapOldGivesNothing(t *testing.T) {
	const limit = 4
	var now atomic.Int64
	now.Store(int64(5 * time.Millisecond))
	lim, err := New(limit, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	now.Add(int64(time.Millisecond))
	require.Equal(t, 1, lim.Sweep(), "swept once its window ended")
	now.Add(int64(time.Millisecond)<<packed.WindowIndexBits - int64(time.Millisecond)) // r's index mod 2^42
	passed := 0
	for range limit + 1 {
		if lim.Allow("k") {
			passed++
		}
	}
	require.Equal(t, limit, passed, "a new window: the limit passes")
	lim.Refund("k", r)
	assert.False(t, lim.Allow("k"), "the refund gave back nothing: the window is full")
	assert.Equal(t, 0, lim.Take("k", 0).Remaining)
}

// TestStaleReadingAfterARefundEmptiedTheWindow: at 2 per second, window 0
// is full when A reads the clock at 0.9 s; before A loads the word the clock
// reaches 1.1 s, where B takes one and refunds it, leaving window 1 empty. A
// must not count in window 0, which already passed its limit: in the model
// the key's stored window is 1 by then, so A counts there, and window 1 has
// room for one more request, not two.
func TestStaleReadingAfterARefundEmptiedTheWindow(t *testing.T) {
	for _, viaTake := range []bool{false, true} {
		var c limitertest.HookClock
		lim, err := New(2, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		c.Now.Store(int64(900 * time.Millisecond))
		require.True(t, lim.Take("k", 2).Allowed, "window 0: full")
		c.Hook = func() {
			c.Now.Store(int64(1100 * time.Millisecond))
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed, "B in window 1")
			lim.Refund("k", r)
			require.Equal(t, 2, lim.Take("k", 0).Remaining, "B refunded: window 1 empty")
		}
		if viaTake {
			assert.True(t, lim.Take("k", 1).Allowed, "A, counted in window 1")
		} else {
			assert.True(t, lim.Allow("k"), "A, counted in window 1")
		}
		require.Nil(t, c.Hook, "the hook ran inside A's call")
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 900 * time.Millisecond},
			lim.Take("k", 0), "window 1 holds A's request (Take=%v)", viaTake)
		passed := 0
		for lim.Allow("k") {
			passed++
			require.LessOrEqual(t, passed, 2)
		}
		assert.Equal(t, 1, passed, "window 1 has room for one more (Take=%v)", viaTake)
	}
}

// TestStaleCallerFindsTheCellInsertedAfterARefundDroppedTheKey: at 2 per
// second, A loads the key's cell and stalls in its clock reading at 0.9 s,
// window 0 full; meanwhile the clock reaches 1.1 s, B takes one and refunds
// it, which empties window 1 and deletes the key, and C's request inserts a
// new cell for the key and counts in window 1. A meets the tombstone, takes
// C's cell, not a fresh one of its own, and counts in window 1 beside C's
// request: window 1 is then full. With a key cap of one key, and with an
// auto-sweep whose walks the refund pays, likewise.
func TestStaleCallerFindsTheCellInsertedAfterARefundDroppedTheKey(t *testing.T) {
	for _, o := range []struct {
		name string
		opt  hotlimit.Option
	}{{"plain", hotlimit.WithMaxKeys(0)}, {"cap=1", hotlimit.WithMaxKeys(1)}, {"auto-sweep=1", hotlimit.WithAutoSweep(1)}} {
		t.Run(o.name, func(t *testing.T) {
			var c limitertest.HookClock
			lim, err := New(2, time.Second, hotlimit.WithClock(c.Read), o.opt)
			require.NoError(t, err)
			c.Now.Store(int64(900 * time.Millisecond))
			require.True(t, lim.Take("k", 2).Allowed, "window 0: full")
			c.Hook = func() {
				c.Now.Store(int64(1100 * time.Millisecond))
				d, r := lim.TakeReceipt("k", 1)
				require.True(t, d.Allowed, "B in window 1")
				lim.Refund("k", r)
				require.Zero(t, lim.Len(), "B's refund deleted the key")
				require.True(t, lim.Allow("k"), "C in window 1, in a new cell")
			}
			assert.True(t, lim.Allow("k"), "A, counted in window 1")
			require.Nil(t, c.Hook, "the hook ran inside A's call")
			assert.Equal(t, 1, lim.Len())
			assert.False(t, lim.Allow("k"), "window 1 is full: C's request and A's")
		})
	}
}
