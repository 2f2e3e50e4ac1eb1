package limitertest

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// RefundsBehindAStepBack is for the windowed algorithms (fixed window,
// sliding counter), whose limiters newLimiter builds, giving receipts: a
// limiter of 2 per window takes one request; the clock steps back behind
// the key's window, into the first window of the clock's range, which
// starts before math.MinInt64 (1 ms windows, from the second window), or
// about 2^64 ns, from near math.MaxInt64 to math.MinInt64, where
// behind·Window − rem passes math.MaxInt64 though the key's window starts
// before it (1 h windows, from the window before the last). A Take of 1
// there counts in the key's window, its receipt names that window's start
// (not math.MaxInt64, nor a start wrapped around), and refunding it gives
// the request back.
func RefundsBehindAStepBack(t *testing.T, newLimiter Constructor) {
	for _, c := range []struct {
		name     string
		window   time.Duration
		from, to int64
	}{
		{"into the first window", time.Millisecond, math.MinInt64 + int64(time.Millisecond), math.MinInt64},
		{"across the range", time.Hour, math.MaxInt64 - 2*int64(time.Hour), math.MinInt64},
	} {
		t.Run(c.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(c.from)
			keyed, err := newLimiter(2, c.window, now.Load)
			require.NoError(t, err)
			lim, ok := keyed.(hotlimit.Refunder)
			require.True(t, ok, "the limiter gives receipts")
			_, r1 := lim.TakeReceipt("k", 1)
			require.Equal(t, hotlimit.Receipt{N: 1, At: c.from}, r1)
			now.Store(c.to)
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			start := floorDiv(c.from, int64(c.window)) * int64(c.window)
			assert.Equal(t, hotlimit.Receipt{N: 1, At: start}, r, "counted at the key's window's start")
			lim.Refund("k", r)
			assert.Equal(t, 1, keyed.Take("k", 0).Remaining, "the refund gave the request back")
		})
	}
}
