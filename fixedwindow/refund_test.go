package fixedwindow

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
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
	lim.Refund("nobody", r3)
	assert.Equal(t, 1, lim.Len(), "Refund inserts no key")
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

// TestRefundFrozenHammer: with a frozen clock, 32 goroutines take and refund
// on one key: the passes total the limit plus the refunds, and the requests
// held out never exceed the limit.
func TestRefundFrozenHammer(t *testing.T) {
	const goroutines = 32
	for _, limit := range []int{1, 2, 7, 100} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			lim, err := New(limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
			require.NoError(t, err)
			var passed, refunded, out, maxOut atomic.Int64
			var wg sync.WaitGroup
			start := make(chan struct{})
			for g := range goroutines {
				wg.Go(func() {
					<-start
					for i := range 300 {
						n := 1 + (g+i)%min(3, limit)
						d, r := lim.TakeReceipt("k", n)
						if !d.Allowed {
							continue
						}
						passed.Add(int64(n))
						o := out.Add(int64(n))
						for m := maxOut.Load(); o > m && !maxOut.CompareAndSwap(m, o); m = maxOut.Load() {
						}
						if refunded.Load() < 100 || i%3 != 0 {
							out.Add(-int64(n))
							refunded.Add(int64(n))
							lim.Refund("k", r)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			for lim.Allow("k") {
				passed.Add(1)
				out.Add(1)
			}
			assert.Equal(t, int64(limit)+refunded.Load(), passed.Load())
			assert.EqualValues(t, limit, out.Load())
			assert.LessOrEqual(t, maxOut.Load(), int64(limit))
			assert.Positive(t, refunded.Load())
		})
	}
}

func TestRefundAllocs(t *testing.T) {
	lim, err := New(100, time.Second, hotlimit.WithClock(func() int64 { return 42 }))
	require.NoError(t, err)
	lim.Allow("k")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, r := lim.TakeReceipt("k", 2)
		lim.Refund("k", r)
	}))
}
