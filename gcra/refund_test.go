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
