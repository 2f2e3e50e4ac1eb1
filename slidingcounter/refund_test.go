package slidingcounter

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestRefundScript: a refund in the Take's window restores the counts
// exactly; in the next window it lowers the previous count, whose weight it
// restores exactly; two windows later it gives nothing back.
func TestRefundScript(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Second))
	lim, err := New(10, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)

	d, r := lim.TakeReceipt("k", 4)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 4, At: now.Load()}, r)
	now.Add(int64(500 * time.Millisecond))
	lim.Refund("k", r)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 10}, lim.Take("k", 0), "restored exactly")

	// 8 in window 10; at 11.5 s the estimate is 8·0.5 = 4. Refunding 4 of
	// them lowers the previous count to 4: estimate 2.
	_, r = lim.TakeReceipt("k", 8)
	require.Equal(t, 8, r.N)
	now.Add(int64(time.Second)) // 11.5 s
	_, r2 := lim.TakeReceipt("k", 1)
	require.Equal(t, 1, r2.N)
	assert.Equal(t, 5, lim.Take("k", 0).Remaining, "4 + 1")
	lim.Refund("k", hotlimit.Receipt{N: 4, At: r.At})
	assert.Equal(t, 7, lim.Take("k", 0).Remaining, "2 + 1")
	lim.Refund("k", r2)
	assert.Equal(t, 8, lim.Take("k", 0).Remaining, "2 + 0")

	_, r3 := lim.TakeReceipt("k", 11)
	assert.Zero(t, r3, "denied: the zero receipt")
	lim.Refund("k", r3)
	lim.Refund("k", hotlimit.Receipt{N: -3, At: r.At})
	assert.Equal(t, 8, lim.Take("k", 0).Remaining)

	// Two windows later window 10's count weighs nothing: no refund.
	now.Add(int64(time.Second)) // 12.5 s
	_, r4 := lim.TakeReceipt("k", 10)
	require.Equal(t, 10, r4.N)
	lim.Refund("k", hotlimit.Receipt{N: 4, At: r.At})
	assert.Zero(t, lim.Take("k", 0).Remaining)
	lim.Refund("k", hotlimit.Receipt{N: 100, At: r4.At}) // made up: not below zero
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 10}, lim.Take("k", 0))
	assert.Zero(t, lim.Len(), "the refund that emptied the key evicted it")
	lim.Refund("nobody", r4)
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
	now.Add(-int64(2500 * time.Millisecond)) // back into window 7
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

// TestRefundOfAReceiptAWrapOldGivesNothing: a receipt taken 2^30 windows
// before the refund names a window whose index, kept modulo 2^30, is the
// current one's; its requests weigh on nothing any more (the key was swept
// since), so the refund must not lower the current window's count, which
// holds other requests: the key would then admit more than its limit in that
// window.
func TestRefundOfAReceiptAWrapOldGivesNothing(t *testing.T) {
	const limit = 4
	var now atomic.Int64
	now.Store(int64(5 * time.Millisecond))
	lim, err := New(limit, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	now.Add(int64(2 * time.Millisecond))
	require.Equal(t, 1, lim.Sweep(), "swept once its count stopped weighing, as the package asks")
	now.Add(int64(time.Millisecond)<<indexBits - int64(2*time.Millisecond)) // r's index mod 2^30
	passed := 0
	for range limit + 1 {
		if lim.Allow("k") {
			passed++
		}
	}
	require.Equal(t, limit, passed, "a new window, far from the old one: the limit passes")
	lim.Refund("k", r)
	assert.False(t, lim.Allow("k"), "the refund gave back nothing: the window is full")
	assert.Equal(t, 0, lim.Take("k", 0).Remaining)
}

// TestRefundRacingAdmissionLosesNeither: at 2 per second, A takes one at
// 0.5 s. B's Allow loads the word (count 1) and, between its clock reading
// and its CAS, A's refund lands (count 0). B's CAS, from count 1 to 2, fails;
// B decides again on count 0 and writes 1. Both writes count: one request
// is held, one more passes, and then none. A write that ignored the refund
// would hold two (A's refund lost); one that ignored B would hold none.
func TestRefundRacingAdmissionLosesNeither(t *testing.T) {
	var c limitertest.HookClock
	c.Now.Store(int64(500 * time.Millisecond))
	lim, err := New(2, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	c.Hook = func() { lim.Refund("k", r) } // inside B's clock reading
	require.True(t, lim.Allow("k"), "B")
	require.Nil(t, c.Hook, "the hook ran, inside B's call")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500*time.Millisecond + 1},
		lim.Take("k", 0), "B's request alone is held")
	assert.True(t, lim.Allow("k"))
	assert.False(t, lim.Allow("k"))
}

// TestStaleReadingAfterARefundEmptiedTheCounts: at 2 per second, A loads the
// key's word (one request in window 0) and reads the clock at 0.95 s; before
// A writes, D takes one (window 0 is full), the clock reaches 2.1 s, and B
// takes one and refunds it, leaving both counts of window 2 empty. A must not
// count in window 0, which already passed its limit: in the model the key's
// stored window is 2 by the time A's request takes effect, so A counts there,
// and window 2 has room for one more request, not two.
func TestStaleReadingAfterARefundEmptiedTheCounts(t *testing.T) {
	for _, viaTake := range []bool{false, true} {
		var c limitertest.HookClock
		lim, err := New(2, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		c.Now.Store(int64(900 * time.Millisecond))
		require.True(t, lim.Allow("k"), "window 0: one")
		c.Now.Store(int64(950 * time.Millisecond))
		c.Hook = func() { // inside A's clock reading, after its load
			require.True(t, lim.Allow("k"), "D: window 0 full")
			require.False(t, lim.Allow("k"), "window 0 is full")
			c.Now.Store(int64(2100 * time.Millisecond))
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed, "B in window 2")
			lim.Refund("k", r)
			require.Equal(t, 2, lim.Take("k", 0).Remaining, "B refunded: window 2 empty")
		}
		want := hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 900*time.Millisecond + 1}
		if viaTake {
			d, r := lim.TakeReceipt("k", 1)
			assert.Equal(t, want, d, "A, counted in window 2")
			assert.Equal(t, int64(2100*time.Millisecond), r.At, "A's receipt names window 2")
		} else {
			assert.True(t, lim.Allow("k"), "A, counted in window 2")
		}
		require.Nil(t, c.Hook, "the hook ran inside A's call")
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 900*time.Millisecond + 1},
			lim.Take("k", 0), "window 2 holds A's request (Take=%v)", viaTake)
		passed := 0
		for lim.Allow("k") {
			passed++
			require.LessOrEqual(t, passed, 2)
		}
		assert.Equal(t, 1, passed, "window 2 has room for one more (Take=%v)", viaTake)
	}
}

// TestStaleCallerFindsTheCellInsertedAfterARefundDroppedTheKey: at 2 per
// second, A loads the key's word (one request in window 0) and stalls in its
// clock reading at 0.95 s; meanwhile D fills window 0, the clock reaches
// 2.1 s, B takes one and refunds it, which empties both counts and deletes
// the key, and C's request inserts a new cell for the key and counts in
// window 2. A's CAS fails on the tombstone; A takes C's cell, not a fresh one
// of its own, reads the clock again and counts in window 2 beside C's
// request: window 2 is then full. With a key cap of one key, and with an
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
			require.True(t, lim.Allow("k"), "window 0: one")
			c.Now.Store(int64(950 * time.Millisecond))
			c.Hook = func() { // inside A's clock reading, after its load
				require.True(t, lim.Allow("k"), "D: window 0 full")
				c.Now.Store(int64(2100 * time.Millisecond))
				d, r := lim.TakeReceipt("k", 1)
				require.True(t, d.Allowed, "B in window 2")
				lim.Refund("k", r)
				require.Zero(t, lim.Len(), "B's refund deleted the key")
				require.True(t, lim.Allow("k"), "C in window 2, in a new cell")
			}
			assert.True(t, lim.Allow("k"), "A, counted in window 2")
			require.Nil(t, c.Hook, "the hook ran inside A's call")
			assert.Equal(t, 1, lim.Len())
			assert.False(t, lim.Allow("k"), "window 2 is full: C's request and A's")
		})
	}
}

// TestReceiptAcrossTheWholeClockRangeNamesTheKeysWindow: with the longest
// window, a clock that stepped back from the window before the one holding
// math.MaxInt64 to math.MinInt64, 583 windows behind, counts the request in
// the key's window, whose start is an int64 even though its distance from the
// clock reading is not: the receipt names that start, not math.MaxInt64 (the
// start of no window the key holds), and its refund gives the request back.
func TestReceiptAcrossTheWholeClockRangeNamesTheKeysWindow(t *testing.T) {
	w := int64(MaxWindow)
	start := (math.MaxInt64/w - 1) * w // the window before math.MaxInt64's
	var now atomic.Int64
	now.Store(start + 5)
	lim, err := New(10, MaxWindow, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Take("k", 3).Allowed)
	now.Store(math.MinInt64)
	d, r := lim.TakeReceipt("k", 2)
	require.True(t, d.Allowed)
	assert.Equal(t, 5, d.Remaining)
	assert.Equal(t, hotlimit.Receipt{N: 2, At: start}, r, "the key's window's start")
	lim.Refund("k", r)
	assert.Equal(t, 7, lim.Take("k", 0).Remaining, "the refund gave the 2 back")
}

// TestCountedAtIsTheCountedWindowsStart: packed.CountedAt, for clock readings at
// and near both ends of int64, windows up to MaxWindow and any distance
// behind up to 2^29 windows (a wrapped index reads that far), is the start
// of the window behind windows after now's, computed in big.Int, saturated
// at math.MaxInt64: the products behind·Window past 2^63 and 2^64 and the
// sums past math.MaxInt64 included.
func TestCountedAtIsTheCountedWindowsStart(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	windows := []time.Duration{MinWindow, 7 * time.Millisecond, time.Second, 1<<33 + 1, MaxWindow - 1, MaxWindow}
	for _, window := range windows {
		lim, err := New(1, window)
		require.NoError(t, err)
		w := int64(window)
		nows := []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + w, -1, 0, 1, math.MaxInt64 - w, math.MaxInt64 - 1, math.MaxInt64}
		for range 200 {
			nows = append(nows, int64(r.Uint64()), math.MinInt64+r.Int64N(4*w), math.MaxInt64-r.Int64N(4*w))
		}
		behinds := []uint64{1, 2, 291, 292, 293, 583, 584, 1 << 29}
		for range 50 {
			behinds = append(behinds, 1+r.Uint64N(1<<29))
		}
		for _, now := range nows {
			cur, rem := packed.Window(now, lim.window)
			for _, behind := range behinds {
				want := new(big.Int).Mul(new(big.Int).SetInt64(int64(cur)), big.NewInt(w))
				want.Add(want, new(big.Int).Mul(new(big.Int).SetUint64(behind), big.NewInt(w)))
				if !want.IsInt64() {
					want.SetInt64(math.MaxInt64)
				}
				require.Equal(t, want.Int64(), packed.CountedAt(now, rem, behind, lim.window), "window %d, now %d, behind %d", w, now, behind)
			}
		}
	}
}
