package tokenbucket

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestRefundScript: a refund right after the Take restores the bucket
// exactly; later it gives back the tokens less what refilled meanwhile;
// after a fill time, nothing; never above the burst.
func TestRefundScript(t *testing.T) {
	var now atomic.Int64
	now.Store(1e12)
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
	require.NoError(t, err)

	d, r := lim.TakeReceipt("k", 3)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 3, At: 1e12}, r)
	assert.Equal(t, 4, d.Remaining)
	lim.Refund("k", r)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 7}, lim.Take("k", 0), "restored exactly")
	assert.Zero(t, lim.Len(), "a refund that fills the bucket evicts the key at once")

	// Empty the bucket, then refund 200 ms later: one token has refilled,
	// so 7 − 1 = 6 come back, on top of the refilled one: 7.
	_, r = lim.TakeReceipt("k", 7)
	require.Equal(t, 7, r.N)
	now.Add(int64(200 * time.Millisecond))
	lim.Refund("k", r)
	assert.Equal(t, 7, lim.Take("k", 0).Remaining)

	// Drain, take nothing more, refund 600 ms later: 3 tokens refilled, the
	// refund of 2 taken at that time gives nothing (2 − 3 < 0).
	_, r = lim.TakeReceipt("k", 7)
	require.Equal(t, 7, r.N)
	_, r2 := lim.TakeReceipt("k", 1) // denied: the zero receipt
	assert.Zero(t, r2)
	now.Add(int64(600 * time.Millisecond))
	lim.Refund("k", hotlimit.Receipt{N: 2, At: r.At})
	assert.Equal(t, 3, lim.Take("k", 0).Remaining)
	lim.Refund("k", r2) // the zero receipt: a no-op
	lim.Refund("k", hotlimit.Receipt{N: -4, At: r.At})
	assert.Equal(t, 3, lim.Take("k", 0).Remaining)

	// A refund a fill time (1.4 s) after its Take gives nothing.
	_, r = lim.TakeReceipt("k", 3)
	require.Equal(t, 3, r.N)
	now.Add(int64(1400 * time.Millisecond))
	lim.Take("k", 7)
	lim.Refund("k", r)
	assert.Zero(t, lim.Take("k", 0).Remaining)

	// Refunds never insert a key, and never go above the burst.
	lim.Refund("other", hotlimit.Receipt{N: 1, At: now.Load()})
	assert.Equal(t, 1, lim.Len())
	_, r = lim.TakeReceipt("k", 0)
	assert.Zero(t, r)
	now.Add(int64(time.Hour))
	_, r = lim.TakeReceipt("k", 1)
	lim.Refund("k", hotlimit.Receipt{N: 100, At: r.At}) // made up: capped
	assert.Equal(t, 7, lim.Take("k", 0).Remaining)
}

// TestRefundStaleClock: a refund whose clock reads behind the key's latest
// admission counts time up to that admission: it never gives back more than
// a refund made then.
func TestRefundStaleClock(t *testing.T) {
	var now atomic.Int64
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	_, r := lim.TakeReceipt("k", 5)
	now.Add(int64(400 * time.Millisecond))
	require.True(t, lim.Take("k", 2).Allowed) // the 2 refilled tokens
	now.Add(-int64(400 * time.Millisecond))   // a refund with a stale clock
	lim.Refund("k", r)
	now.Add(int64(400 * time.Millisecond))
	assert.Equal(t, 3, lim.Take("k", 0).Remaining, "5 − 2 refilled by the latest admission")
}

// TestRefundFrozenHammer: concurrent takes and refunds on one key pass the
// burst plus the refunds, never holding out more than the burst (see
// limitertest).
func TestRefundFrozenHammer(t *testing.T) {
	for _, c := range []struct{ limit, burst int }{{1, 1}, {7, 7}, {100, 10}, {5, 7}} {
		t.Run(fmt.Sprintf("limit=%d/burst=%d", c.limit, c.burst), func(t *testing.T) {
			lim, err := New(c.limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }), hotlimit.WithBurst(c.burst))
			require.NoError(t, err)
			limitertest.RefundHammer(t, lim, c.burst, 3, true)
		})
	}
}

func TestRefundAllocs(t *testing.T) {
	lim, err := New(100, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
	require.NoError(t, err)
	limitertest.RefundAllocs(t, lim)
}

// TestStaleCallerFindsTheCellInsertedAfterARefundDroppedTheKey: at 2 per
// second, the bucket drained at 0, A loads the key's cell and stalls in its
// clock reading at 0.5 s; meanwhile the clock reaches 1 s, where the bucket
// is full again, B takes one and refunds it, which fills the bucket and
// deletes the key, and C's request inserts a new cell for the key and takes
// one of its two tokens. A meets the tombstone, takes C's cell, not a fresh
// one of its own, and takes the last token: the bucket is then empty. With a
// key cap of one key, and with an auto-sweep whose walks the refund pays,
// likewise.
func TestStaleCallerFindsTheCellInsertedAfterARefundDroppedTheKey(t *testing.T) {
	for _, o := range []struct {
		name string
		opt  hotlimit.Option
	}{{"plain", hotlimit.WithMaxKeys(0)}, {"cap=1", hotlimit.WithMaxKeys(1)}, {"auto-sweep=1", hotlimit.WithAutoSweep(1)}} {
		t.Run(o.name, func(t *testing.T) {
			var c limitertest.HookClock
			lim, err := New(2, time.Second, hotlimit.WithClock(c.Read), o.opt)
			require.NoError(t, err)
			require.True(t, lim.Take("k", 2).Allowed, "the bucket drained at 0")
			c.Now.Store(int64(500 * time.Millisecond))
			c.Hook = func() {
				c.Now.Store(int64(time.Second))
				d, r := lim.TakeReceipt("k", 1)
				require.True(t, d.Allowed, "B at 1 s")
				lim.Refund("k", r)
				require.Zero(t, lim.Len(), "B's refund filled the bucket and deleted the key")
				require.True(t, lim.Allow("k"), "C at 1 s, in a new cell")
			}
			assert.True(t, lim.Allow("k"), "A, from C's cell")
			require.Nil(t, c.Hook, "the hook ran inside A's call")
			assert.Equal(t, 1, lim.Len())
			assert.False(t, lim.Allow("k"), "the bucket is empty: C's token and A's")
		})
	}
}

// TestRefundDeductsTheRefillOnTheGrid: at 65536 per millisecond (F = 0, a
// unit is a token, refilled every 15.26 ns), the bucket drained at 0 by
// three takes, two of 10000 refunded 15 ns later, within the first unit of
// time: the bucket refilled nothing on its grid, so each refund deducts
// nothing and gives its 10000 back, and at 16 ns the bucket holds 20001
// tokens, as a limiter that never made the two takes does. (The exact model
// deducts the 0.98 token refilled in those 15 ns from each refund, and holds
// 19999.08: the two refunds put the count 1.92 units above the model's.)
func TestRefundDeductsTheRefillOnTheGrid(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1<<16, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	without, err := New(1<<16, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.Zero(t, lim.b.FracBits)
	_, r1 := lim.TakeReceipt("k", 10000)
	_, r2 := lim.TakeReceipt("k", 10000)
	require.True(t, lim.Take("k", 45536).Allowed)
	require.True(t, without.Take("k", 45536).Allowed)
	now.Store(15)
	lim.Refund("k", r1)
	lim.Refund("k", r2)
	now.Store(16)
	want := without.Take("k", 0)
	assert.Equal(t, 20001, want.Remaining)
	assert.Equal(t, want, lim.Take("k", 0))
}

// TestRefundAfterAStepBackBehindTheTakeGivesAllBack: a refund whose clock
// stepped back behind the Take finds the bucket as the Take left it, nothing
// refilled since r.At, and gives all of it back, as one at the time of the
// Take does; it does not count the step back as time refilled. At 5 per
// second with a burst of 7 and its epoch at 0, a Take of 3 at 1000 s and its
// refund after a step back of 1 ns to an hour restore the full bucket.
func TestRefundAfterAStepBackBehindTheTakeGivesAllBack(t *testing.T) {
	for _, back := range []time.Duration{time.Nanosecond, 100 * time.Millisecond, time.Second, time.Hour} {
		t.Run(back.String(), func(t *testing.T) {
			var now atomic.Int64
			lim, err := New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
			require.NoError(t, err)
			now.Store(1000e9)
			d, r := lim.TakeReceipt("k", 3)
			require.True(t, d.Allowed)
			now.Add(-int64(back))
			lim.Refund("k", r)
			assert.Equal(t, 7, lim.Take("k", 0).Remaining, "the refund gives all 3 back")
			assert.Zero(t, lim.Len(), "the refund filled the bucket, which holds no key")
		})
	}
}

// TestRefundOfMoreThanTheBurstGivesBackTheBurstLessTheRefill: a receipt of
// more tokens than the burst (no Take of this limiter writes one) gives back
// at most the burst, less what refilled since r.At, as the model does. At 1
// per second with a burst of 2: a Take of 1 at 0 (its receipt made out for
// 5), another at 0 and one at 1 s leave 0.5 token at 1.5 s, 1.5 refilled
// since the receipt; the refund gives back 2 − 1.5 = 0.5, up to 1 token,
// where 5 − 1.5 would fill the bucket.
func TestRefundOfMoreThanTheBurstGivesBackTheBurstLessTheRefill(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(2))
	require.NoError(t, err)
	m := models.NewTokenBucket(1, 2, time.Second, 0)
	take := func(at time.Duration) hotlimit.Receipt {
		now.Store(int64(at))
		d, r := lim.TakeReceipt("k", 1)
		require.Equal(t, m.Take("k", 1, int64(at)), d, "take at %v", at)
		return r
	}
	r := take(0)
	take(0)
	take(time.Second)
	r.N = 5
	now.Store(int64(1500 * time.Millisecond))
	lim.Refund("k", r)
	m.Refund("k", r, now.Load())
	want := m.Take("k", 0, now.Load())
	require.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, Remaining: 1, ResetAfter: time.Second}, want)
	assert.Equal(t, want, lim.Take("k", 0))
}

// TestRefundGivesNothingBackAfterAFillTimeWhereTheUnitsWrap: a refund a fill
// time or more after its receipt gives nothing back, also when the units
// refilled since the receipt, counted modulo 2^64, wrap around to few or
// none. At 2^20 per millisecond with a burst of 1, u(t) = ⌊t·2^(20+F)/10^6⌋
// reaches 2^64 at t = 2^(44−F)·10^6 ns (about 17 years for F = 5): a key
// drained there, refunded the receipt of a Take at 0, stays drained.
func TestRefundGivesNothingBackAfterAFillTimeWhereTheUnitsWrap(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1<<20, time.Millisecond, hotlimit.WithClock(now.Load), hotlimit.WithBurst(1))
	require.NoError(t, err)
	f := lim.b.FracBits
	require.Less(t, f, uint(44))
	wrap := int64(1) << (44 - f) * 1e6
	require.LessOrEqual(t, wrap, int64(maxTime))
	u, _ := lim.b.Units(uint64(wrap))
	require.Zero(t, u, "u(wrap) = 2^64, zero modulo 2^64")

	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	now.Store(wrap)
	require.True(t, lim.Take("k", 1).Allowed, "full again long since")
	lim.Refund("k", r)
	d = lim.Take("k", 0)
	assert.Zero(t, d.Remaining, "the receipt is years old: nothing of it counts")
	assert.Equal(t, time.Nanosecond, d.ResetAfter, "one token at 2^20 per ms: 10^6/2^20 ns, rounded up")
}

// TestRefundAfterTheTimestampWraps: once u(t) has passed its 2^T modulus
// (the stored timestamp is u mod 2^T), a refund still counts only what
// refilled since the receipt: one at the time of the Take restores the
// bucket, one 0.5 s later gives back 1 − 0.5 token. At 1 per second with a
// burst of 2, Takes of 1 and 1 just after the wrap.
func TestRefundAfterTheTimestampWraps(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(2))
	require.NoError(t, err)
	at := wrapTime(lim) + int64(time.Second)
	now.Store(at)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	lim.Refund("k", r)
	assert.Equal(t, 2, lim.Take("k", 0).Remaining, "restored")

	_, r = lim.TakeReceipt("k", 2)
	now.Store(at + int64(500*time.Millisecond))
	lim.Refund("k", r)
	d = lim.Take("k", 0)
	assert.Equal(t, 2, d.Remaining, "0.5 refilled + 2 − 0.5 given back: full")
	_, r = lim.TakeReceipt("k", 2)
	require.Equal(t, r.At, now.Load())
	now.Add(int64(500 * time.Millisecond))
	lim.Refund("k", hotlimit.Receipt{N: 1, At: r.At})
	d = lim.Take("k", 0)
	assert.Equal(t, 1, d.Remaining, "0.5 refilled + 1 − 0.5 given back")
	assert.Equal(t, time.Second, d.ResetAfter)
}
