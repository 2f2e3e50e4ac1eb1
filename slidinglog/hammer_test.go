package slidinglog_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// sweepUntil calls lim.Sweep in a loop on a new goroutine until stop is
// closed, and returns the goroutine's WaitGroup.
func sweepUntil(lim *slidinglog.Limiter, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				lim.Sweep()
			}
		}
	})
	return &wg
}

// TestFrozenClockHammer: with the clock frozen, 32 goroutines making many
// more calls than limit pass exactly limit per key, round after round (each
// round a window later, so the previous round's logs are expired and a
// concurrent Sweep races the first admissions of the round).
func TestFrozenClockHammer(t *testing.T) {
	const goroutines = 32
	keys := []string{"x", "y", "z"}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for _, limit := range []int{1, 2, 7, 100, 1000} {
		for _, sweep := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/sweep=%t", limit, sweep), func(t *testing.T) {
				var now atomic.Int64
				lim, err := slidinglog.New(limit, time.Second, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				perKey := max(limit/8, 16) // calls per goroutine per key: 32·perKey ≥ 4·limit
				stop := make(chan struct{})
				if sweep {
					defer sweepUntil(lim, stop).Wait()
				}
				defer close(stop)
				for round := range rounds {
					now.Store(int64(round) * int64(time.Second))
					var passed [3]atomic.Int64
					start := make(chan struct{})
					var wg sync.WaitGroup
					for g := range goroutines {
						wg.Go(func() {
							<-start
							for i := range perKey * len(keys) {
								k := (g + i) % len(keys)
								var ok bool
								if i%2 == 0 {
									ok = lim.Allow(keys[k])
								} else {
									ok = lim.Take(keys[k], 1).Allowed
								}
								if ok {
									passed[k].Add(1)
								}
							}
						})
					}
					close(start)
					wg.Wait()
					for k := range keys {
						assert.EqualValues(t, limit, passed[k].Load(), "round %d key %s", round, keys[k])
						assert.Zero(t, lim.Take(keys[k], 0).Remaining)
					}
				}
			})
		}
	}
}

// TestFrozenClockTakeN: goroutines asking for n > 1 at once never get more
// than limit in all, even with single requests filling what is left; and
// once the window has passed, the full limit is available again in one Take:
// claims left by Takes denied under contention count for one window only.
func TestFrozenClockTakeN(t *testing.T) {
	const goroutines = 16
	for _, limit := range []int{2, 7, 100} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			var now atomic.Int64
			lim, err := slidinglog.New(limit, time.Second, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			for round := range 20 {
				now.Store(int64(round) * int64(time.Second))
				var passed atomic.Int64
				start := make(chan struct{})
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						<-start
						for i := range 2 * limit {
							n := 1 + (g+i)%3
							if lim.Take("k", n).Allowed {
								passed.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				for lim.Allow("k") {
					passed.Add(1)
				}
				assert.LessOrEqual(t, passed.Load(), int64(limit), "round %d", round)
				assert.Positive(t, passed.Load(), "round %d", round)
			}
			now.Add(int64(time.Second))
			assert.True(t, lim.Take("k", limit).Allowed, "the full limit after a window")
		})
	}
}

// TestPhasedHammer moves a fake clock between phases and in each phase lets
// goroutines hammer Allow: the passes of each key in the phase equal those of
// the sequential model, whatever the interleaving, and so does the state
// reported afterwards.
func TestPhasedHammer(t *testing.T) {
	const (
		goroutines = 16
		limit      = 50
		window     = int64(time.Second)
	)
	keys := []string{"a", "b", "c", "d"}
	phases := 80
	if testing.Short() {
		phases = 25
	}
	for _, sweep := range []bool{false, true} {
		t.Run(fmt.Sprintf("sweep=%t", sweep), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			var now atomic.Int64
			lim, err := slidinglog.New(limit, time.Duration(window), hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			m := newModel(limit, time.Duration(window))
			stop := make(chan struct{})
			if sweep {
				defer sweepUntil(lim, stop).Wait()
			}
			defer close(stop)
			for phase := range phases {
				switch rng.IntN(3) {
				case 0:
					now.Add(rng.Int64N(window / 4))
				case 1:
					now.Add(window / 2)
				default:
					now.Add(window)
				}
				at := now.Load()
				calls := rng.IntN(9)
				want := make([]int64, len(keys))
				for k, key := range keys {
					for range goroutines * calls {
						if m.take(key, 1, at).Allowed {
							want[k]++
						}
					}
				}
				got := make([]atomic.Int64, len(keys))
				start := make(chan struct{})
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						<-start
						for i := range calls * len(keys) {
							k := (g + i) % len(keys)
							if lim.Allow(keys[k]) {
								got[k].Add(1)
							}
						}
					})
				}
				close(start)
				wg.Wait()
				for k, key := range keys {
					require.Equal(t, want[k], got[k].Load(), "phase %d key %s", phase, key)
					require.Equal(t, m.take(key, 0, at), lim.Take(key, 0), "phase %d key %s", phase, key)
				}
			}
		})
	}
}

// TestMovingClockNeverOverAdmits: with a clock that advances on every read,
// many goroutines on one key, asking for 1 to 3 requests at once while a
// Sweep runs, never get more than limit admissions whose clock readings span
// less than a window. Each admission's logged time lies between the clock
// just before the call and just after it, so the check counts, for each
// admission, those that surely lie within a window of it.
func TestMovingClockNeverOverAdmits(t *testing.T) {
	const (
		goroutines = 8
		limit      = 5
		window     = int64(time.Millisecond)
	)
	var now atomic.Int64
	clock := func() int64 { return now.Add(1 + rand.Int64N(window/100)) }
	lim, err := slidinglog.New(limit, time.Duration(window), hotlimit.WithClock(clock))
	require.NoError(t, err)
	type span struct{ from, to int64 }
	var mu sync.Mutex
	var admitted []span
	stop := make(chan struct{})
	sweeper := sweepUntil(lim, stop)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range 3000 {
				n := 1 + (g+i)%3
				from := now.Load()
				ok := lim.Take("k", n).Allowed
				to := now.Load()
				if ok {
					mu.Lock()
					for range n {
						admitted = append(admitted, span{from, to})
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	require.NotEmpty(t, admitted)
	for _, a := range admitted {
		// Admissions that surely lie in (a.to − window, a.from]: their whole
		// span does.
		within := 0
		for _, b := range admitted {
			if b.from > a.to-window && b.to <= a.from {
				within++
			}
		}
		assert.LessOrEqual(t, within, limit)
	}
}
