package slidingcounter_test

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
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// sweepUntil calls lim.Sweep in a loop on a new goroutine until stop is
// closed, and returns the goroutine's WaitGroup.
func sweepUntil(lim *slidingcounter.Limiter, stop <-chan struct{}) *sync.WaitGroup {
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
// round two windows after the last, so the previous round's cells are idle
// and a concurrent Sweep races the first admissions of the round).
func TestFrozenClockHammer(t *testing.T) {
	const goroutines = 32
	keys := []string{"x", "y", "z"}
	rounds := 8
	if testing.Short() {
		rounds = 2
	}
	for _, limit := range []int{1, 2, 7, 100, 1000} {
		for _, sweep := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/sweep=%t", limit, sweep), func(t *testing.T) {
				var now atomic.Int64
				lim, err := slidingcounter.New(limit, time.Second, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				perKey := max(limit/8, 16) // calls per goroutine per key: 32·perKey ≥ 4·limit
				stop := make(chan struct{})
				if sweep {
					defer sweepUntil(lim, stop).Wait()
				}
				defer close(stop)
				for round := range rounds {
					now.Store(int64(2*round)*int64(time.Second) + int64(500*ms))
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
					}
				}
			})
		}
	}
}

// TestPhasedHammer moves a fake clock between phases (within a window, so
// prev's weight decays, to the next, over several, and back) and in each phase lets goroutines hammer
// Take(key, n) with one n: the passes of each key in the phase equal those of
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
			now.Store(-3 * window)
			lim, err := slidingcounter.New(limit, time.Duration(window), hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			m := newModel(limit, time.Duration(window))
			stop := make(chan struct{})
			if sweep {
				defer sweepUntil(lim, stop).Wait()
			}
			defer close(stop)
			for phase := range phases {
				switch rng.IntN(5) {
				case 0:
					now.Add(rng.Int64N(window / 4))
				case 1:
					now.Add(window)
				case 2:
					now.Add(window * rng.Int64N(4))
				case 3:
					now.Add(-rng.Int64N(2 * window))
				default:
					now.Add(window - (now.Load()%window+window)%window) // to the boundary
				}
				at := now.Load()
				n := 1 + rng.IntN(3)
				calls := rng.IntN(9) // per goroutine and key: sometimes fewer than the quota left
				want := make([]int64, len(keys))
				for k, key := range keys {
					for range goroutines * calls {
						if m.take(key, n, at).Allowed {
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
							if lim.Take(keys[k], n).Allowed {
								got[k].Add(1)
							}
						}
					})
				}
				close(start)
				wg.Wait()
				for k, key := range keys {
					assert.Equal(t, want[k], got[k].Load(), "phase %d key %s: passes", phase, key)
					assert.Equal(t, m.take(key, 0, at), lim.Take(key, 0), "phase %d key %s: state", phase, key)
				}
			}
		})
	}
}

// TestMovingClockHammer moves the clock while goroutines hammer (and, in one
// run, a Sweep loops): a key never passes more than limit per aligned window
// the clock went through.
func TestMovingClockHammer(t *testing.T) {
	const (
		goroutines = 8
		limit      = 5
	)
	calls := 20000
	if testing.Short() {
		calls = 3000
	}
	for _, sweep := range []bool{false, true} {
		t.Run(fmt.Sprintf("sweep=%t", sweep), func(t *testing.T) {
			var now atomic.Int64
			first := -int64(7 * time.Millisecond)
			now.Store(first)
			lim, err := slidingcounter.New(limit, ms, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			stop := make(chan struct{})
			var ticker sync.WaitGroup
			ticker.Go(func() {
				rng := rand.New(rand.NewPCG(9, 10))
				for {
					select {
					case <-stop:
						return
					default:
						now.Add(rng.Int64N(int64(50 * time.Microsecond)))
					}
				}
			})
			if sweep {
				defer sweepUntil(lim, stop).Wait()
			}
			var passed [2]atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range calls {
						if lim.Allow([]string{"p", "q"}[(g+i)%2]) {
							passed[(g+i)%2].Add(1)
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			ticker.Wait()
			windows := floorDiv(now.Load(), int64(ms)) - floorDiv(first, int64(ms)) + 1
			for k := range passed {
				assert.Positive(t, passed[k].Load())
				assert.LessOrEqual(t, passed[k].Load(), limit*windows, "key %d over %d windows", k, windows)
			}
		})
	}
}
