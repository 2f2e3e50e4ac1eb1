package limitertest

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// RefundHammer: 32 goroutines take 1 to maxN requests at once from one key of
// lim, whose clock is frozen with capacity requests available, and give
// many of them back at once. Afterwards single requests take what is left.
// The requests held out (taken and not given back) never exceed capacity;
// when exact, the passes total capacity plus the refunds and exactly capacity
// are held out at the end. Not exact suits a limiter that may leave capacity
// unused under contention (slidinglog's Take with n > 1).
func RefundHammer(t *testing.T, lim hotlimit.Refunder, capacity, maxN int, exact bool) {
	t.Helper()
	const goroutines = 32
	c := newChecker(t)
	defer c.done()
	var passed, refunded, out, maxOut atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for g := range goroutines {
		wg.Go(func() {
			<-start
			for i := range 300 {
				n := 1 + (g+i)%min(maxN, capacity)
				d, r := lim.TakeReceipt("k", n)
				c.check(d, "k", n, 0)
				if !d.Allowed {
					continue
				}
				passed.Add(int64(n))
				o := out.Add(int64(n))
				for m := maxOut.Load(); o > m && !maxOut.CompareAndSwap(m, o); m = maxOut.Load() {
				}
				if refunded.Load() < 100 || i%3 != 0 { // the first ones, then two in three
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
	if exact {
		assert.Equal(t, int64(capacity)+refunded.Load(), passed.Load())
		assert.EqualValues(t, capacity, out.Load())
	} else {
		assert.LessOrEqual(t, passed.Load(), int64(capacity)+refunded.Load())
		assert.LessOrEqual(t, out.Load(), int64(capacity))
	}
	assert.LessOrEqual(t, maxOut.Load(), int64(capacity))
	assert.Positive(t, refunded.Load())
}

// RefundAllocs asserts that taking 2 from an existing key of lim and giving
// them back allocates nothing.
func RefundAllocs(t *testing.T, lim hotlimit.Refunder) {
	t.Helper()
	lim.Allow("k")
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		_, r := lim.TakeReceipt("k", 2)
		lim.Refund("k", r)
	}))
}
