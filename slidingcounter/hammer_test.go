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
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestFrozenClockHammer: exactly limit per key and round, from 32
// goroutines, with and without a concurrent Sweep (see limitertest).
func TestFrozenClockHammer(t *testing.T) {
	limitertest.FrozenHammer(t, limitertest.Adapt(slidingcounter.New), time.Second,
		func(r int) time.Duration { return time.Duration(2*r)*time.Second + 500*time.Millisecond },
		func(limit int) int { return limit })
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
				sweeper, _ := limitertest.SweepUntil(lim, stop)
				defer sweeper.Wait()
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
				sweeper, _ := limitertest.SweepUntil(lim, stop)
				defer sweeper.Wait()
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
