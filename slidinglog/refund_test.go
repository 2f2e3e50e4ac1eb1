package slidinglog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestRefundScript: a refund while the Take is in the window restores the
// capacity exactly; the expired entries are the oldest in the window; after
// the Take left the window, nothing.
func TestRefundScript(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(20 * time.Second))
	lim, err := New(4, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)

	d, r := lim.TakeReceipt("k", 3)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 3, At: now.Load()}, r)
	lim.Refund("k", r)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 4}, lim.Take("k", 0), "restored exactly")
	for i := range 4 {
		require.True(t, lim.Allow("k"), "call %d", i)
	}
	require.False(t, lim.Allow("k"))

	// Requests at 20.0 (4, refunded above and taken again); a refund of one
	// of them at 20.5 s frees one slot now.
	now.Store(int64(20*time.Second + 500*time.Millisecond))
	lim.Refund("k", hotlimit.Receipt{N: 1, At: int64(20 * time.Second)})
	d, r = lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	require.False(t, lim.Allow("k"))

	// At 21.0 s the three left at 20.0 expire; the one at 20.5 stays. (They
	// were logged at 20.0 s + 1 ns: a claim over a refunded entry of the same
	// time logs 1 ns after it, so that the slot's value grows.)
	now.Store(int64(21*time.Second + 1))
	assert.Equal(t, 3, lim.Take("k", 0).Remaining)
	lim.Refund("k", r) // still in the window: frees the 20.5 one
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 4}, lim.Take("k", 0))

	// A refund out of the window gives nothing.
	_, r = lim.TakeReceipt("k", 4)
	require.Equal(t, 4, r.N)
	now.Add(int64(time.Second))
	_, r2 := lim.TakeReceipt("k", 4)
	require.Equal(t, 4, r2.N)
	lim.Refund("k", r)
	assert.Zero(t, lim.Take("k", 0).Remaining)

	_, r3 := lim.TakeReceipt("k", 1)
	assert.Zero(t, r3, "denied: the zero receipt")
	lim.Refund("k", r3)
	lim.Refund("k", hotlimit.Receipt{N: -2, At: r2.At})
	assert.Zero(t, lim.Take("k", 0).Remaining)
	lim.Refund("k", hotlimit.Receipt{N: 100, At: r2.At}) // made up: at most the log
	assert.Equal(t, 4, lim.Take("k", 0).Remaining)
	lim.Refund("nobody", r2)
	assert.Equal(t, 1, lim.Len(), "Refund inserts no key")
}

// TestRefundOldestFirst: entries at 0, 300, 600 and 900 ms; a refund of the
// 900 ms request at 900 ms expires the 0 ms entry, so one request passes now,
// as without the 900 ms one. Later the log holds the 900 ms entry where the
// log without that request would not: the refund gives back less in the
// future, never more (at 1.2 s: 1 passes where 2 would; at 1.5 s: 2 where 3
// would), and once the 900 ms entry has left, the same (all 4 at 1.9 s).
func TestRefundOldestFirst(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Second))
	lim, err := New(4, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	base := now.Load()
	var last hotlimit.Receipt
	for i := range 4 {
		now.Store(base + int64(i)*int64(300*time.Millisecond))
		_, last = lim.TakeReceipt("k", 1)
		require.Equal(t, 1, last.N)
	}
	lim.Refund("k", last)
	for _, step := range []struct {
		at   time.Duration
		want int
	}{
		{900 * time.Millisecond, 1},
		{1200 * time.Millisecond, 1},
		{1500 * time.Millisecond, 2},
		{1899 * time.Millisecond, 3},
		{1900 * time.Millisecond, 4},
	} {
		now.Store(base + int64(step.at))
		assert.Equal(t, step.want, lim.Take("k", 0).Remaining, "at %v", step.at)
		assert.False(t, lim.Take("k", step.want+1).Allowed, "at %v", step.at)
	}
}

// TestRefundRacingClaimsLosesNothing: with a frozen clock, 32 goroutines take
// one request each while fewer than 7 are out, and give some back at once.
// Every refund must mark an entry: afterwards the key holds exactly the
// requests kept, and the rest of the limit passes. (A refund that searched
// the ring by bisection could miss the oldest counted entry while a claim
// was in flight under the head, and give nothing back.)
func TestRefundRacingClaimsLosesNothing(t *testing.T) {
	const limit, out = 10, 7
	iters := 200
	if testing.Short() {
		iters = 40
	}
	for iter := range iters {
		lim, err := New(limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
		require.NoError(t, err)
		var passed, refunded, quota atomic.Int64
		quota.Store(out)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 32 {
			wg.Go(func() {
				<-start
				for range 100 {
					if quota.Add(-1) < 0 {
						quota.Add(1)
						continue
					}
					d, r := lim.TakeReceipt("k", 1)
					if !assert.True(t, d.Allowed, "fewer than the limit are out") {
						return
					}
					passed.Add(1)
					if refunded.Add(1) <= 50 {
						lim.Refund("k", r)
						quota.Add(1)
					} else {
						refunded.Add(-1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		require.Equal(t, out+refunded.Load(), passed.Load(), "iter %d", iter)
		require.Equal(t, limit-out, lim.Take("k", 0).Remaining, "iter %d", iter)
	}
}

// TestRefundFrozenHammer: concurrent takes and refunds on one key pass the
// limit plus the refunds, never holding out more than the limit (see
// limitertest). With Take of 2 and 3 mixed in, a Take denied under contention
// may leave claims spent (see Limiter.Take), so the passes may be fewer.
func TestRefundFrozenHammer(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 100} {
		for _, maxN := range []int{1, 3} {
			t.Run(fmt.Sprintf("limit=%d/n<=%d", limit, maxN), func(t *testing.T) {
				lim, err := New(limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
				require.NoError(t, err)
				limitertest.RefundHammer(t, lim, limit, maxN, maxN == 1)
			})
		}
	}
}

func TestRefundAllocs(t *testing.T) {
	lim, err := New(100, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
	require.NoError(t, err)
	limitertest.RefundAllocs(t, lim)
}
