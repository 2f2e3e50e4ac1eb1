package gcra_test

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
	"github.com/hotlimit/hotlimit/gcra"
)

// sweepUntil calls lim.Sweep in a loop on a new goroutine until stop is
// closed, and returns the goroutine's WaitGroup and a count of its evictions.
func sweepUntil(lim *gcra.Limiter, stop <-chan struct{}) (*sync.WaitGroup, *atomic.Int64) {
	var wg sync.WaitGroup
	var swept atomic.Int64
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				swept.Add(int64(lim.Sweep()))
			}
		}
	})
	return &wg, &swept
}

// TestFrozenClockHammer: with the clock frozen, 32 goroutines making many
// more calls than the burst pass exactly the burst per key, round after
// round. Each round moves the clock past a full refill, so the previous
// round's keys are full, and a concurrent Sweep races the first admissions
// of the round.
func TestFrozenClockHammer(t *testing.T) {
	const goroutines = 32
	keys := []string{"x", "y", "z"}
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for _, limit := range []int{1, 2, 7, 100} {
		for _, burst := range []int{0, 3} {
			for _, sweep := range []bool{false, true} {
				t.Run(fmt.Sprintf("limit=%d/burst=%d/sweep=%t", limit, burst, sweep), func(t *testing.T) {
					var now atomic.Int64
					lim, err := gcra.New(limit, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
					require.NoError(t, err)
					want := int64(limit)
					if burst > 0 {
						want = int64(burst)
					}
					perKey := max(limit/8, 16) // calls per goroutine per key: 32·perKey ≥ 4·burst
					stop := make(chan struct{})
					if sweep {
						wg, _ := sweepUntil(lim, stop)
						defer wg.Wait()
					}
					defer close(stop)
					for round := range rounds {
						now.Store(int64(round) * int64(time.Hour))
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
							assert.Equal(t, want, passed[k].Load(), "round %d key %s", round, keys[k])
						}
					}
				})
			}
		}
	}
}

// TestPhasedHammer moves a fake clock between phases (a fraction of T, whole
// tokens, past a full refill, and back) and in each phase lets goroutines
// hammer Take(key, n) with one n: the passes of each key in the phase equal
// those of the sequential model, whatever the interleaving, and so does the
// state reported afterwards. With a frozen clock and one n, the order of the
// calls does not change how many pass.
func TestPhasedHammer(t *testing.T) {
	const (
		goroutines = 16
		limit      = 50
		burst      = 30
		window     = int64(time.Second)
		tok        = window / limit
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
			epoch := int64(-3 * window)
			now.Store(epoch)
			lim, err := gcra.New(limit, time.Duration(window), hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
			require.NoError(t, err)
			m := newModel(limit, burst, time.Duration(window), epoch)
			stop := make(chan struct{})
			var swept *atomic.Int64
			if sweep {
				var wg *sync.WaitGroup
				wg, swept = sweepUntil(lim, stop)
				defer wg.Wait()
			}
			defer close(stop)
			for phase := range phases {
				switch rng.IntN(5) {
				case 0:
					now.Add(rng.Int64N(tok))
				case 1:
					now.Add(tok * (1 + rng.Int64N(5)))
				case 2:
					now.Add(window * rng.Int64N(2))
				case 3:
					now.Add(-rng.Int64N(3 * tok))
				default:
					now.Add(rng.Int64N(window / 3))
				}
				at := now.Load()
				n := 1 + rng.IntN(3)
				calls := rng.IntN(6) // per goroutine and key: sometimes fewer than the tokens left
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
			if sweep {
				assert.Positive(t, swept.Load(), "the sweeper evicted keys")
			}
		})
	}
}

// TestMovingClockHammer moves the clock while goroutines hammer and a Sweep
// loops: a key never passes more than burst + elapsed·limit/window, GCRA's
// conservation law.
func TestMovingClockHammer(t *testing.T) {
	const (
		goroutines = 8
		limit      = 5
		burst      = 3
	)
	calls := 20000
	if testing.Short() {
		calls = 3000
	}
	var now atomic.Int64
	lim, err := gcra.New(limit, ms, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
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
	sw, _ := sweepUntil(lim, stop)
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
	sw.Wait()
	bound := burst + now.Load()*limit/int64(ms)
	for k := range passed {
		assert.Positive(t, passed[k].Load())
		assert.LessOrEqual(t, passed[k].Load(), bound, "key %d", k)
	}
}
