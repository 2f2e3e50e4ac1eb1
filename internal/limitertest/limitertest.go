// Package limitertest holds the tests every keyed limiter of this module
// must pass, written once: a frozen-clock hammer with a concurrent Sweep, and
// the benchmark scaffolding. Each limiter package calls them with its own
// constructor.
package limitertest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// Keyed is a limiter of this module: a hotlimit.Limiter that holds keys and
// sweeps idle ones.
type Keyed interface {
	hotlimit.Limiter
	Len() int
	Sweep() int
}

// Constructor builds a limiter of limit per window that reads clock.
type Constructor func(limit int, window time.Duration, clock hotlimit.Clock) (Keyed, error)

// Adapt turns a package's New into a Constructor; extra options (a burst)
// are passed along.
func Adapt[L Keyed](newLimiter func(int, time.Duration, ...hotlimit.Option) (L, error), opts ...hotlimit.Option) Constructor {
	return func(limit int, window time.Duration, clock hotlimit.Clock) (Keyed, error) {
		l, err := newLimiter(limit, window, append([]hotlimit.Option{hotlimit.WithClock(clock)}, opts...)...)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// SweepUntil calls lim.Sweep in a loop on a new goroutine until stop is
// closed, and returns the goroutine's WaitGroup and the count of evictions.
func SweepUntil(lim interface{ Sweep() int }, stop <-chan struct{}) (*sync.WaitGroup, *atomic.Int64) {
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

// FrozenHammer: with the clock frozen, 32 goroutines making many more calls
// than the limit (mixing Allow and Take(key, 1)) pass exactly want(limit)
// per key, round after round, for limits 1, 2, 7, 100 and 1000, with and
// without a Sweep looping on another goroutine. Round r freezes the clock at
// at(r); rounds must be far enough apart that every key of the previous round
// is idle, so that the Sweep races the first admissions of each round.
func FrozenHammer(t *testing.T, newLimiter Constructor, window time.Duration, at func(round int) time.Duration, want func(limit int) int) {
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
				lim, err := newLimiter(limit, window, now.Load)
				require.NoError(t, err)
				wantPerKey := int64(want(limit))
				perKey := max(int(wantPerKey)/8, 16) // calls per goroutine per key: 32·perKey ≥ 4·want
				stop := make(chan struct{})
				if sweep {
					sweeper, _ := SweepUntil(lim, stop)
					defer sweeper.Wait()
				}
				defer close(stop)
				for round := range rounds {
					now.Store(int64(at(round)))
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
						assert.Equal(t, wantPerKey, passed[k].Load(), "round %d key %s", round, keys[k])
						assert.Zero(t, lim.Take(keys[k], 0).Remaining, "round %d key %s", round, keys[k])
					}
				}
			})
		}
	}
}

// Model is a sequential reference model of a limiter: Take(key, n) at time
// now, as the limiter must answer it.
type Model func(key string, n int, now int64) hotlimit.Decision

// PhasedHammer moves a fake clock between phases (within a window, to the
// next, over several, back, and to a window boundary) and in each phase lets
// 16 goroutines hammer Take(key, n), with one n up to 3: the passes of each
// key in the phase equal those of the sequential model, whatever the
// interleaving, and so does the state reported afterwards; with and without
// a Sweep looping. For limiters whose decisions depend only on the state and
// the time of the call: the windowed ones.
func PhasedHammer(t *testing.T, newLimiter Constructor, newModel func(limit int, window time.Duration) Model) {
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
			lim, err := newLimiter(limit, time.Duration(window), now.Load)
			require.NoError(t, err)
			take := newModel(limit, time.Duration(window))
			stop := make(chan struct{})
			if sweep {
				sweeper, _ := SweepUntil(lim, stop)
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
						if take(key, n, at).Allowed {
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
					assert.Equal(t, take(key, 0, at), lim.Take(key, 0), "phase %d key %s: state", phase, key)
				}
			}
		})
	}
}

// MovingClockHammer moves the clock while 8 goroutines hammer (and, in one
// run, a Sweep loops): a key never passes more than limit per aligned window
// the clock went through.
func MovingClockHammer(t *testing.T, newLimiter Constructor) {
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
			lim, err := newLimiter(limit, time.Millisecond, now.Load)
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
				sweeper, _ := SweepUntil(lim, stop)
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
			windows := floorDiv(now.Load(), int64(time.Millisecond)) - floorDiv(first, int64(time.Millisecond)) + 1
			for k := range passed {
				assert.Positive(t, passed[k].Load())
				assert.LessOrEqual(t, passed[k].Load(), limit*windows, "key %d over %d windows", k, windows)
			}
		})
	}
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// Keys returns n distinct keys.
func Keys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkAllow times Allow serially on one key and in parallel on one key
// and on 100k keys, as sub-benchmarks mode=serial/keys=1 and
// mode=parallel/keys=N, on limiters newLimiter builds, whose keys are
// inserted before timing.
func BenchmarkAllow(b *testing.B, newLimiter func(b *testing.B) hotlimit.Limiter) {
	b.Run("mode=serial/keys=1", func(b *testing.B) {
		lim := insert(b, newLimiter(b), Keys(1))
		b.ReportAllocs()
		for b.Loop() {
			lim.Allow("user:0")
		}
	})
	for _, n := range []int{1, 100000} {
		b.Run(fmt.Sprintf("mode=parallel/keys=%d", n), func(b *testing.B) {
			keys := Keys(n)
			lim := insert(b, newLimiter(b), keys)
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for i := rand.IntN(n); pb.Next(); i++ {
					lim.Allow(keys[i%n])
				}
			})
		})
	}
}

// BenchmarkTake times Take(key, n) serially on one key, as the
// sub-benchmark n=N/mode=serial/keys=1.
func BenchmarkTake(b *testing.B, newLimiter func(b *testing.B) hotlimit.Limiter, n int) {
	b.Run(fmt.Sprintf("n=%d/mode=serial/keys=1", n), func(b *testing.B) {
		lim := insert(b, newLimiter(b), Keys(1))
		b.ReportAllocs()
		for b.Loop() {
			lim.Take("user:0", n)
		}
	})
}

// insert makes one call per key, so the timed calls find every key.
func insert(b *testing.B, lim hotlimit.Limiter, keys []string) hotlimit.Limiter {
	for _, k := range keys {
		lim.Allow(k)
	}
	if l, ok := lim.(interface{ Len() int }); ok {
		require.Equal(b, len(keys), l.Len())
	}
	return lim
}
