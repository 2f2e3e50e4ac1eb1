package slidingcounter_test

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

func TestSweepEvictsOnlyIdleKeys(t *testing.T) {
	var now atomic.Int64
	lim, err := slidingcounter.New(3, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)

	now.Store(int64(500 * ms))
	require.True(t, lim.Allow("old")) // window 0
	now.Store(int64(1500 * ms))
	require.True(t, lim.Allow("recent")) // window 1
	now.Store(int64(5500 * ms))
	require.True(t, lim.Allow("future")) // window 5
	now.Store(int64(2500 * ms))          // back to window 2
	require.True(t, lim.Take("live", 3).Allowed)
	require.True(t, lim.Allow("future")) // counted in window 5
	lim.Take("reported", 0)
	require.Equal(t, 4, lim.Len())

	assert.Equal(t, 1, lim.Sweep(), "only window 0, two before the clock's, is idle")
	assert.Equal(t, 3, lim.Len())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("old", 0))
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("recent", 0),
		"window 1's count weighs ⌊1·0.5⌋ = 0 but is kept")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 1, ResetAfter: 4*time.Second + 1},
		lim.Take("future", 0), "a later window is kept")
	assert.False(t, lim.Allow("live"), "a full current window is kept")

	now.Store(int64(7 * time.Second))
	assert.Equal(t, 3, lim.Sweep())
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Second + 1}, lim.Take("live", 1))
}

// TestSweepWithinTheIndexSpan pins the windows after a key's last request
// in which a Sweep evicts it, as the package documentation gives them: from 2
// (the counts still weigh before) to 2^29 − 1 (from 2^29 the stored index
// reads as a newer window); so Sweeps at least every 2^29 − 2 windows meet
// every idle key in time. With 1 ms windows 2^29 are about 6.2 days, with 1 s
// about 17 years.
func TestSweepWithinTheIndexSpan(t *testing.T) {
	const day, year = 24 * float64(time.Hour), 365.25 * 24 * float64(time.Hour)
	assert.InDelta(t, 6.2, float64(1<<29*slidingcounter.MinWindow)/day, 0.05)
	assert.InDelta(t, 17, float64(1<<29*time.Second)/year, 0.05)
	for _, tc := range []struct {
		after   int64 // windows after the key's last request
		evicted bool
	}{
		{0, false},
		{1, false}, // the count is prev now, and weighs
		{2, true},
		{1<<29 - 1, true},
		{1 << 29, false}, // reads as a newer window
	} {
		var now atomic.Int64
		lim, err := slidingcounter.New(1, slidingcounter.MinWindow, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		require.True(t, lim.Allow("k"))
		now.Store(tc.after * int64(slidingcounter.MinWindow))
		assert.Equal(t, tc.evicted, lim.Sweep() == 1, "%d windows after", tc.after)
	}
}

// TestRefundEvictsEmptiedKeys: a key whose counts refunds took back to zero
// is a fresh key whatever its window: the refund that emptied them evicted
// it and deleted it from the map at once, in the Take's own window too,
// leaving Sweep nothing to do; a key with one request left is kept.
func TestRefundEvictsEmptiedKeys(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(500 * ms))
	lim, err := slidingcounter.New(3, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	_, r := lim.TakeReceipt("refunded", 2)
	require.Equal(t, 2, r.N)
	_, k := lim.TakeReceipt("kept", 2)
	require.Equal(t, 2, k.N)
	lim.Refund("refunded", r)
	lim.Refund("kept", hotlimit.Receipt{N: 1, At: k.At})
	assert.Equal(t, 1, lim.Len(), "the refunded key evicted, in its Take's window")
	assert.Zero(t, lim.Sweep(), "already evicted")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("refunded", 0))
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 500*ms + 1}, lim.Take("kept", 0))

	now.Store(int64(1500 * ms)) // the next window: kept's count is its prev
	_, k = lim.TakeReceipt("kept", 1)
	require.Equal(t, 1, k.N)
	lim.Refund("kept", k)
	assert.Zero(t, lim.Sweep(), "prev still counts")
	lim.Refund("kept", hotlimit.Receipt{N: 1, At: int64(500 * ms)})
	assert.Zero(t, lim.Len(), "both counts refunded: evicted")
	assert.Zero(t, lim.Sweep())
}

// TestSweepBetweenClockReadAndWrite: a call reads the clock in a full window,
// then, before it writes, the clock moves two windows on and a Sweep evicts
// the key. The call must not count in the full window on the key's fresh
// cell; it reads the clock again and counts in the new window.
func TestSweepBetweenClockReadAndWrite(t *testing.T) {
	const limit = 3
	for _, viaTake := range []bool{false, true} {
		var now atomic.Int64
		var lim *slidingcounter.Limiter
		var hook atomic.Bool
		clock := func() int64 {
			if hook.CompareAndSwap(true, false) {
				stale := now.Load()
				now.Store(int64(2500 * ms))
				require.Equal(t, 1, lim.Sweep())
				return stale
			}
			return now.Load()
		}
		var err error
		lim, err = slidingcounter.New(limit, time.Second, hotlimit.WithClock(clock))
		require.NoError(t, err)
		now.Store(int64(200 * ms))
		// Window 0 holds limit−1: the stale reading admits, the CAS finds
		// the tombstone, and the call starts over on the fresh cell.
		require.True(t, lim.Take("k", limit-1).Allowed)
		hook.Store(true)
		want := hotlimit.Decision{Allowed: true, Limit: limit, Remaining: limit - 1, ResetAfter: 500*ms + 1}
		if viaTake {
			assert.Equal(t, want, lim.Take("k", 1), "Take: counted in window 2")
		} else {
			assert.True(t, lim.Allow("k"))
		}
		assert.False(t, hook.Load(), "the hook ran")
		want.Allowed = true
		assert.Equal(t, want, lim.Take("k", 0), "take=%t: window 2 holds the call", viaTake)
	}
}

// TestSweepRacingAllowLosesNoUpdate: rounds two windows apart make every key
// idle at the start of a round, while a Sweep loops; goroutines then admit a
// known number of requests per key. Every admission must be on the key's
// live cell: afterwards each key reports exactly that many taken.
func TestSweepRacingAllowLosesNoUpdate(t *testing.T) {
	const (
		goroutines = 16
		perKey     = 3 // calls per goroutine and key
		limit      = goroutines*perKey + 5
	)
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	var now atomic.Int64
	lim, err := slidingcounter.New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	stop := make(chan struct{})
	var evicted, passes atomic.Int64
	var sweeps sync.WaitGroup
	sweeps.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				evicted.Add(int64(lim.Sweep()))
				passes.Add(1)
			}
		}
	})
	for round := range rounds {
		now.Store(int64(2*round)*int64(time.Second) + int64(100*ms))
		if round%2 == 1 { // let a whole pass see the new clock: the round starts on evicted keys
			for p := passes.Load(); passes.Load() < p+2; {
				runtime.Gosched()
			}
		}
		var wg sync.WaitGroup
		var denied atomic.Int64
		for g := range goroutines {
			wg.Go(func() {
				for i := range perKey * len(keys) {
					k := keys[(g+i)%len(keys)]
					ok := i%2 == 0 && lim.Allow(k) || i%2 == 1 && lim.Take(k, 1).Allowed
					if !ok {
						denied.Add(1)
					}
				}
			})
		}
		wg.Wait()
		assert.Zero(t, denied.Load(), "round %d", round)
		for _, k := range keys {
			assert.Equal(t, limit-goroutines*perKey, lim.Take(k, 0).Remaining, "round %d key %s", round, k)
		}
	}
	close(stop)
	sweeps.Wait()
	assert.Positive(t, evicted.Load(), "the concurrent sweeps evicted idle keys")
	now.Add(int64(2 * time.Second))
	assert.Equal(t, len(keys), lim.Sweep())
	assert.Zero(t, lim.Len())
}

// TestWithAutoSweep: a stream of new keys, one request each, stays bounded
// when the limiter sweeps itself, and a hot key's decisions are unchanged.
func TestWithAutoSweep(t *testing.T) {
	var now atomic.Int64
	lim, err := slidingcounter.New(1, ms, hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(64))
	require.NoError(t, err)
	peak := 0
	for i := range 5000 {
		now.Add(int64(2 * ms))
		require.True(t, lim.Allow("hot"), "step %d", i)
		require.False(t, lim.Allow("hot"), "step %d", i)
		require.True(t, lim.Allow(strconv.Itoa(i)), "step %d", i)
		peak = max(peak, lim.Len())
	}
	assert.LessOrEqual(t, peak, 64+16, "the threshold, plus the insertions between two steps of the sweep")
	assert.LessOrEqual(t, lim.Len(), 64+16)

	// Off by default: nothing is evicted.
	plain, err := slidingcounter.New(1, ms, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i := range 200 {
		now.Add(int64(2 * ms))
		plain.Allow(fmt.Sprint(i))
	}
	assert.Equal(t, 200, plain.Len())
}
