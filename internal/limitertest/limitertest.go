// Package limitertest holds the tests every keyed limiter of this module
// must pass, written once: hammers with a frozen clock, with a clock that
// moves between phases (against a sequential model, with Sweeps that must
// evict) and with a clock that moves under the callers, the linearizable
// Remaining property, the rules every Decision keeps (Problem), and the
// benchmark scaffolding. Each limiter package calls them with its own
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
// is idle, so that the Sweep races the first admissions of each round. Every
// Decision passes Problem's rules, a denied one included.
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
				c := newChecker(t)
				defer c.done()
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
									d := lim.Take(keys[k], 1)
									c.check(d, keys[k], 1, now.Load())
									ok = d.Allowed
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
						d := lim.Take(keys[k], 0)
						c.check(d, keys[k], 0, now.Load())
						assert.Zero(t, d.Remaining, "round %d key %s", round, keys[k])
						d = lim.Take(keys[k], 1)
						c.check(d, keys[k], 1, now.Load())
						assert.False(t, d.Allowed, "round %d key %s: one more", round, keys[k])
					}
				}
			})
		}
	}
}

// Model is a sequential reference model of a limiter: Take(key, n) at time
// now, as the limiter must answer it.
type Model func(key string, n int, now int64) hotlimit.Decision

// PhasedHammer's limiters admit PhasedLimit per second; the clock starts
// at PhasedStart, the epoch a model may need.
const (
	PhasedLimit = 50
	PhasedStart = -3 * time.Second
)

// Move is a step of PhasedHammer's clock, drawn from rng: how far to move
// it, given the window; back (negative) by at most two windows.
type Move func(rng *rand.Rand, window int64) int64

// PhaseOption changes what PhasedHammer does.
type PhaseOption func(*phases)

type phases struct {
	maxN      int
	moves     []Move
	tolerance time.Duration
}

// Tolerance lets the RetryAfter and ResetAfter PhasedHammer reads after
// each phase differ from the model's by up to d, for a limiter whose
// durations are rounded (a token bucket's fixed-point tokens).
func Tolerance(d time.Duration) PhaseOption { return func(p *phases) { p.tolerance = d } }

// sameState asserts that got, the Decision of Take(key, 0), is want, the
// model's, with durations within tolerance.
func (p *phases) sameState(t *testing.T, want, got hotlimit.Decision, msgAndArgs ...any) {
	if p.tolerance == 0 {
		assert.Equal(t, want, got, msgAndArgs...)
		return
	}
	assert.InDelta(t, want.RetryAfter, got.RetryAfter, float64(p.tolerance), msgAndArgs...)
	assert.InDelta(t, want.ResetAfter, got.ResetAfter, float64(p.tolerance), msgAndArgs...)
	want.RetryAfter, want.ResetAfter = got.RetryAfter, got.ResetAfter
	assert.Equal(t, want, got, msgAndArgs...)
}

// MaxN makes PhasedHammer ask for at most n requests at once (3 otherwise).
func MaxN(n int) PhaseOption { return func(p *phases) { p.maxN = n } }

// Moves makes PhasedHammer move its clock by one of moves, drawn at random,
// instead of its own (within a window, to the next, over several, back, and
// to a window boundary).
func Moves(moves ...Move) PhaseOption { return func(p *phases) { p.moves = moves } }

// defaultMoves are PhasedHammer's own clock steps.
var defaultMoves = []Move{
	func(rng *rand.Rand, window int64) int64 { return rng.Int64N(window / 4) },
	func(rng *rand.Rand, window int64) int64 { return window },
	func(rng *rand.Rand, window int64) int64 { return window * rng.Int64N(4) },
	func(rng *rand.Rand, window int64) int64 { return -rng.Int64N(2 * window) },
	nil, // to the next window boundary
}

// idleWindows is how many windows after the latest clock reading so far
// PhasedHammer's idle phases move the clock: far enough that every key of
// every limiter of this module equals a fresh one (a fixed window's ended,
// a sliding counter's two windows after its own, a sliding log's entries
// expired, a bucket or a GCRA of burst up to the limit full), even after
// the next phase steps back by up to two windows (a key evicted in an idle
// phase is used again in the next one).
const idleWindows = 5

// PhasedHammer moves a fake clock between phases and in each phase lets 16
// goroutines hammer Take(key, n), with one n up to 3 (alternating with Allow
// when n is 1): the passes of each key in the phase equal those of the
// sequential model, whatever the interleaving, and so does the state
// reported afterwards. Every Decision passes Problem's rules. For limiters
// whose decisions depend only on the state and the time of the call: the
// windowed ones, and GCRA.
//
// Every fourth phase is idle: the clock moves idleWindows windows past the
// latest reading so far, so every key is evictable. With sweep=true, a
// Sweep races the traffic of every phase (it starts with it and loops until
// it ends, at least once), and eviction is asserted, never left to chance:
// in half of the idle phases a Sweep run before the traffic, when every key
// is known idle, evicts every key (Len drops to 0); in the other half one
// key gets no traffic, and the racing Sweep evicts it (Len drops by one).
// Sweeps run only within a phase, at its clock: an eviction then changes no
// decision, even for the limiters (GCRA, the sliding log) where one made
// before a step back would.
func PhasedHammer(t *testing.T, newLimiter Constructor, newModel func(limit int, window time.Duration) Model, opts ...PhaseOption) {
	const (
		goroutines = 16
		limit      = PhasedLimit
		window     = int64(time.Second)
	)
	cfg := phases{maxN: 3, moves: defaultMoves}
	for _, o := range opts {
		o(&cfg)
	}
	keys := []string{"a", "b", "c", "d"}
	phaseCount := 80
	if testing.Short() {
		phaseCount = 25
	}
	for _, sweep := range []bool{false, true} {
		t.Run(fmt.Sprintf("sweep=%t", sweep), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			var now atomic.Int64
			now.Store(int64(PhasedStart))
			latest := now.Load()
			lim, err := newLimiter(limit, time.Duration(window), now.Load)
			require.NoError(t, err)
			take := newModel(limit, time.Duration(window))
			c := newChecker(t)
			defer c.done()
			var racedTotal int64
			for phase := range phaseCount {
				idle := phase%4 == 3
				if idle {
					now.Store(latest + idleWindows*window)
				} else if move := cfg.moves[rng.IntN(len(cfg.moves))]; move != nil {
					now.Add(move(rng, window))
				} else {
					now.Add(window - (now.Load()%window+window)%window) // to the boundary
				}
				at := now.Load()
				latest = max(latest, at)
				n := 1 + rng.IntN(cfg.maxN)
				calls := rng.IntN(9) // per goroutine and key: sometimes fewer than the quota left
				rested := -1         // a key that gets no traffic in this phase
				if sweep {
					// Every key gets traffic in every phase but an idle one's
					// rested key, so every key is held before each idle phase.
					calls = max(calls, 1)
				}
				if sweep && idle {
					require.Equal(t, len(keys), lim.Len(), "phase %d: keys held", phase)
					if phase%8 == 3 {
						assert.Equal(t, len(keys), lim.Sweep(), "phase %d: a Sweep evicts every idle key", phase)
						assert.Zero(t, lim.Len(), "phase %d: keys held after the Sweep", phase)
					} else {
						rested = phase / 8 % len(keys)
					}
				}
				want := make([]int64, len(keys))
				for k, key := range keys {
					if k == rested {
						continue
					}
					for range goroutines * calls {
						if take(key, n, at).Allowed {
							want[k]++
						}
					}
				}
				got := make([]atomic.Int64, len(keys))
				start := make(chan struct{})
				var traffic, sweeper sync.WaitGroup
				var done atomic.Bool
				var raced atomic.Int64
				if sweep {
					sweeper.Go(func() {
						<-start
						for {
							raced.Add(int64(lim.Sweep()))
							if done.Load() {
								return
							}
						}
					})
				}
				for g := range goroutines {
					traffic.Go(func() {
						<-start
						for i := range calls * len(keys) {
							k := (g + i) % len(keys)
							if k == rested {
								continue
							}
							var ok bool
							if n == 1 && i%2 == 0 {
								ok = lim.Allow(keys[k])
							} else {
								d := lim.Take(keys[k], n)
								c.check(d, keys[k], n, at)
								ok = d.Allowed
							}
							if ok {
								got[k].Add(1)
							}
						}
					})
				}
				close(start)
				traffic.Wait()
				done.Store(true)
				sweeper.Wait()
				racedTotal += raced.Load()
				if rested >= 0 {
					assert.Positive(t, raced.Load(), "phase %d: the Sweep racing the traffic evicted the idle key %s", phase, keys[rested])
					assert.Equal(t, len(keys)-1, lim.Len(), "phase %d: keys held after the idle key's eviction", phase)
				}
				for k, key := range keys {
					assert.Equal(t, want[k], got[k].Load(), "phase %d key %s: passes", phase, key)
					d := lim.Take(key, 0)
					c.check(d, key, 0, at)
					cfg.sameState(t, take(key, 0, at), d, "phase %d key %s: state", phase, key)
				}
			}
			if sweep {
				assert.Positive(t, racedTotal, "the Sweeps racing the traffic evicted keys")
			}
		})
	}
}

// MovingClockHammer moves the clock while 8 goroutines hammer (and, in one
// run, a Sweep loops): a key never passes more than limit per aligned window
// the clock went through, and every Decision passes Problem's rules.
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
			c := newChecker(t)
			defer c.done()
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
						key := []string{"p", "q"}[(g+i)%2]
						ok := false
						if i%4 < 2 {
							ok = lim.Allow(key)
						} else {
							d := lim.Take(key, 1)
							c.check(d, key, 1, now.Load())
							ok = d.Allowed
						}
						if ok {
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

// BenchCallStep is a gap between two calls on one key shorter than any core
// leaves: a serial Allow takes 50 to 60 ns on the machines the benchmarks
// run on, its clock read alone about 30 ns. A benchmark whose comment says
// every call is admitted must admit calls that come one every BenchCallStep.
const BenchCallStep = 25 * time.Nanosecond

// AdmitsBenchCalls requires allow, a benchmark's call on one key of a
// limiter built on clock, to pass calls times in a row, one every
// BenchCallStep: the benchmark then times admissions, as its comment says,
// not denials.
func AdmitsBenchCalls(t *testing.T, calls int, build func(clock func() int64) func() bool) {
	t.Helper()
	var now atomic.Int64
	allow := build(now.Load)
	for i := range calls {
		now.Add(int64(BenchCallStep))
		if !allow() {
			require.Failf(t, "a benchmark call is denied", "call %d, at %v", i, time.Duration(now.Load()))
		}
	}
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
