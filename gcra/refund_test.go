package gcra

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

// TestRefundScript: a refund right after the Take restores the key exactly;
// later it gives back the requests less the time elapsed; after N·T,
// nothing; never more than a full key.
func TestRefundScript(t *testing.T) {
	var now atomic.Int64
	now.Store(1e12)
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
	require.NoError(t, err)

	d, r := lim.TakeReceipt("k", 3)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 3, At: 1e12}, r)
	lim.Refund("k", r)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 7}, lim.Take("k", 0), "restored exactly")

	_, r = lim.TakeReceipt("k", 7)
	require.Equal(t, 7, r.N)
	now.Add(int64(200 * time.Millisecond)) // one token refilled
	lim.Refund("k", r)                     // gives back 6
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 7}, lim.Take("k", 0))

	_, r = lim.TakeReceipt("k", 7)
	require.Equal(t, 7, r.N)
	now.Add(int64(600 * time.Millisecond)) // 3 refilled
	lim.Refund("k", hotlimit.Receipt{N: 2, At: r.At})
	assert.Equal(t, 3, lim.Take("k", 0).Remaining, "2 − 3 < 0: nothing back")
	lim.Refund("k", hotlimit.Receipt{N: 4, At: r.At})
	assert.Equal(t, 4, lim.Take("k", 0).Remaining, "4 − 3 = 1 back")

	_, r2 := lim.TakeReceipt("k", 5) // denied
	assert.Zero(t, r2)
	lim.Refund("k", r2)
	lim.Refund("k", hotlimit.Receipt{N: -1, At: r.At})
	lim.Refund("nobody", hotlimit.Receipt{N: 1, At: now.Load()})
	assert.Equal(t, 4, lim.Take("k", 0).Remaining)
	assert.Equal(t, 1, lim.Len(), "Refund inserts no key")

	_, r = lim.TakeReceipt("k", 1)
	lim.Refund("k", hotlimit.Receipt{N: 1000, At: r.At}) // made up: capped at full
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 7}, lim.Take("k", 0))
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

// TestRefundRacingAdmissionLosesNothing: at 2 per second, A takes one at 0
// (TAT 500 ms); at 100 ms A's refund reads the word, and between its clock
// reading and its CAS B's admission lands (TAT 1 s). The refund's CAS fails
// and it gives back from B's word: 400 ms (one token less the 100 ms since
// A), TAT 600 ms, one token left, as the model says. A refund that kept its
// first computation would have erased B's admission (TAT 100 ms, 2 tokens).
func TestRefundRacingAdmissionLosesNothing(t *testing.T) {
	var c limitertest.HookClock
	lim, err := New(2, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	model := models.NewGCRA(2, 2, time.Second, 0)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	model.Take("k", 1, 0)
	c.Now.Store(int64(100 * time.Millisecond))
	var b bool
	c.Hook = func() { b = lim.Allow("k") } // inside the refund's clock reading
	lim.Refund("k", r)
	require.Nil(t, c.Hook, "the hook ran, inside the refund")
	require.True(t, b, "B passed, between the refund's load and its CAS")
	model.Take("k", 1, c.Now.Load())
	model.Refund("k", r, c.Now.Load())
	want := model.Take("k", 0, c.Now.Load())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * time.Millisecond}, want)
	assert.Equal(t, want, lim.Take("k", 0))
}

// TestRefundRacingSweepRevivesNothing: at 2 per second, A takes one at 0
// (TAT 500 ms). At 100 ms B's Allow loads the key's word and reads the clock;
// meanwhile A's refund loads the word, and between its clock reading and its
// CAS the clock moves to 600 ms, where the key is full, and a Sweep evicts
// it. The refund finds the tombstone and gives nothing: written into the
// evicted cell, its word would bring the cell back to life for B, whose
// admission would land there, outside the map, and be lost. B revives the
// key instead and counts at 600 ms, so exactly one more passes there.
func TestRefundRacingSweepRevivesNothing(t *testing.T) {
	var c limitertest.HookClock
	lim, err := New(2, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	c.Now.Store(int64(100 * time.Millisecond))
	swept := 0
	c.Hook = func() { // inside B's clock reading
		c.Hook = func() { // inside the refund's
			c.Now.Store(int64(600 * time.Millisecond))
			swept = lim.Sweep()
		}
		lim.Refund("k", r)
	}
	assert.True(t, lim.Allow("k"), "B")
	require.Nil(t, c.Hook, "both hooks ran")
	require.Equal(t, 1, swept, "the sweep evicted the key under the refund")
	assert.Equal(t, 1, lim.Len())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 1, ResetAfter: 500 * time.Millisecond},
		lim.Take("k", 0), "B counted at 600 ms in the key's new cell")
	passed := 0
	for range 3 {
		if lim.Allow("k") {
			passed++
		}
	}
	assert.Equal(t, 1, passed, "the burst less B, and no more")
}

// TestRefundBeyondTheBurstCountsOnlyTheBurst: no Take passes more than the
// burst, so a receipt for more (made up, or from another limiter) gives
// back at most the burst, less the time elapsed since it, as the model
// does. At 1 per second with a burst of 1, a key drained at 3 s gets a
// refund of 5 requests taken at 0: 1 request less the 3 s elapsed is
// nothing, where 5 less 3 would refill the key.
func TestRefundBeyondTheBurstCountsOnlyTheBurst(t *testing.T) {
	var now atomic.Int64
	lim, err := New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	m := models.NewGCRA(1, 1, time.Second, 0)
	now.Store(int64(3 * time.Second))
	require.True(t, lim.Allow("k"), "drained at 3 s")
	m.Take("k", 1, now.Load())
	r := hotlimit.Receipt{N: 5, At: 0}
	lim.Refund("k", r)
	m.Refund("k", r, now.Load())
	want := m.Take("k", 0, now.Load())
	require.Zero(t, want.Remaining, "the model gives nothing back")
	assert.Equal(t, want, lim.Take("k", 0), "nothing given back")
}

// TestRefundOnAFullKeyLeavesItFull: a key whose TAT is at or before now is
// full, and a refund gives it nothing more: not even a receipt refunded
// twice, or made up with At now, for more than the TAT is ahead of the
// epoch, which taken off the TAT would wrap it to a time centuries ahead.
// At 1 per second with a burst of 2, a key drained and refunded at once is
// full; half a second on, its TAT is behind now.
func TestRefundOnAFullKeyLeavesItFull(t *testing.T) {
	var now atomic.Int64
	now.Store(1e12)
	lim, err := New(1, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(2))
	require.NoError(t, err)
	full := hotlimit.Decision{Allowed: true, Limit: 1, Remaining: 2}
	_, r := lim.TakeReceipt("k", 2)
	require.Equal(t, 2, r.N)
	lim.Refund("k", r)
	require.Equal(t, full, lim.Take("k", 0), "restored exactly")
	now.Add(int64(500 * time.Millisecond))
	lim.Refund("k", r) // refunded twice
	assert.Equal(t, full, lim.Take("k", 0), "a second refund of r")
	lim.Refund("k", hotlimit.Receipt{N: 2, At: now.Load()}) // made up
	assert.Equal(t, full, lim.Take("k", 0), "a made-up receipt of now")
	assert.True(t, lim.Take("k", 2).Allowed, "the burst passes")
}
