package limitertest

import (
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Allower is what the hot-key benchmarks call.
type Allower interface{ Allow(key string) bool }

// hotKey is the key of the hot-key benchmarks. Each limiter gets its first
// call with a copy of it (firstCall), and the timed calls pass hotKey
// itself: a limiter whose map keeps the caller's string (a mutex port) then
// holds a string other than the one it is asked about and compares the
// key's bytes, as one that keeps a copy of its own (hotlimit's) does, and as
// both do on a server, where every request brings a new string.
const hotKey = "hot"

// firstCall makes lim's first call, with a copy of hotKey.
func firstCall(lim Allower) { lim.Allow(strings.Clone(hotKey)) }

// HotKeyPolicy is a policy of the hot-key benchmarks with both limiters of
// it: the package's lock-free limiter and a port of the same algorithm with
// a sync.Mutex per key, the original design, which the lock-free one must
// not lose to.
type HotKeyPolicy struct {
	// Name names the sub-benchmarks: hit=Name.
	Name string
	// Allow says calls pass (at least 99% of them: a moving clock may
	// deny a few); else every call but the first is denied.
	Allow    bool
	LockFree func(tb testing.TB) Allower
	Mutex    func() Allower
}

// HotKey runs parallel Allow on one key, as sub-benchmarks
// hit=<Name>/impl=lockfree and hit=<Name>/impl=mutex, and checks the
// fixture: compare with benchstat -col /impl.
func HotKey(b *testing.B, policies []HotKeyPolicy) {
	for _, p := range policies {
		for _, impl := range []struct {
			name string
			make func() Allower
		}{{"lockfree", func() Allower { return p.LockFree(b) }}, {"mutex", p.Mutex}} {
			b.Run("hit="+p.Name+"/impl="+impl.name, func(b *testing.B) {
				lim := impl.make()
				firstCall(lim)
				var passed, calls atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var ok, n int64
					for pb.Next() {
						if lim.Allow(hotKey) {
							ok++
						}
						n++
					}
					passed.Add(ok)
					calls.Add(n)
				})
				b.StopTimer()
				b.ReportMetric(float64(passed.Load())/float64(calls.Load()), "passed/op")
				checkHotKey(b, p.Allow, passed.Load(), calls.Load())
			})
		}
	}
}

// HotKeyRatio measures the same contention as HotKey, but times the two
// implementations in alternating blocks within one benchmark: in each block,
// GOMAXPROCS goroutines make ratioChunk calls each on one limiter, then on
// the other (which goes first alternates from block to block). It reports
// the medians over the blocks of each one's wall time per call
// (lockfree-ns/call, mutex-ns/call) and of their ratio within a block
// (lockfree/mutex): load that comes and goes on a shared machine falls on
// both halves of a block alike, and the median leaves out the blocks in
// which it fell on one half only. Under 1 the lock-free limiter is faster.
//
// The goroutines live for the whole benchmark and start each half-block
// together, behind a gate that opens only once all of them are running: a
// goroutine started or woken for each half-block can wait tens of
// microseconds for an idle CPU's thread, and would run alone meanwhile.
func HotKeyRatio(b *testing.B, policies []HotKeyPolicy) {
	for _, p := range policies {
		b.Run("hit="+p.Name, func(b *testing.B) {
			lims := [2]Allower{p.LockFree(b), p.Mutex()}
			for _, lim := range lims {
				firstCall(lim)
			}
			procs := runtime.GOMAXPROCS(0)
			// testing calls the function once with b.N = 1 before it sets
			// GOMAXPROCS to the first -cpu value, and reports that call
			// as the first run at that value if it lasted the benchtime,
			// which minRatioBlocks full blocks always do: a run named
			// -cpu 1 would then be one at the GOMAXPROCS of the benchmark
			// before. So b.N = 1 makes one short block, and the runs
			// reported are later calls, under the GOMAXPROCS they are
			// named for (but for -benchtime 1x, which reports this call).
			chunk, minBlocks := ratioChunk, minRatioBlocks
			if b.N == 1 {
				chunk, minBlocks = probeChunk, 1
			}
			var passed [2]atomic.Int64
			crew := make(chan *ratioHalf, procs)
			defer close(crew)
			for range procs {
				go func() {
					for h := range crew {
						h.ready.Add(1)
						for !h.gate.Load() {
							runtime.Gosched()
						}
						n := int64(0)
						for range chunk {
							if h.lim.Allow(hotKey) {
								n++
							}
						}
						h.passed.Add(n)
						h.done.Done()
					}
				}()
			}
			blocks := max(minBlocks, b.N/(chunk*procs))
			var ns [2][]float64
			ratios := make([]float64, 0, blocks)
			b.ResetTimer()
			for k := range blocks {
				var t [2]time.Duration
				for i := range 2 {
					x := (k + i) % 2 // alternate which goes first
					h := &ratioHalf{lim: lims[x], passed: &passed[x]}
					h.done.Add(procs)
					for range procs {
						crew <- h
					}
					for h.ready.Load() < int64(procs) {
						runtime.Gosched()
					}
					start := time.Now()
					h.gate.Store(true)
					h.done.Wait()
					t[x] = time.Since(start)
					ns[x] = append(ns[x], float64(t[x])/float64(procs*chunk))
				}
				ratios = append(ratios, float64(t[0])/float64(max(t[1], 1)))
			}
			b.StopTimer()
			calls := int64(blocks * procs * chunk)
			for x := range 2 {
				checkHotKey(b, p.Allow, passed[x].Load(), calls)
			}
			b.ReportMetric(Median(ns[0]), "lockfree-ns/call")
			b.ReportMetric(Median(ns[1]), "mutex-ns/call")
			b.ReportMetric(Median(ratios), "lockfree/mutex")
		})
	}
}

// ratioHalf is one half of a HotKeyRatio block: each goroutine of the crew
// takes it once, counts itself ready, waits for the gate, makes the block's
// calls on lim, adds the passed ones to passed and reports done.
type ratioHalf struct {
	lim    Allower
	passed *atomic.Int64
	ready  atomic.Int64
	gate   atomic.Bool
	done   sync.WaitGroup
}

const (
	// ratioChunk is how many calls each goroutine makes on one limiter in a
	// block of HotKeyRatio: one to a few milliseconds at one hot key's
	// speed, so that with more goroutines than CPUs a block sees what a long
	// parallel run sees, threads descheduled mid-run (while holding the
	// mutex port's lock, say). With 2000 calls, blocks at -cpu 4 and 8 on
	// two CPUs mostly ended within a time slice: the mutex port's denials
	// read about a third faster than under b.RunParallel, the lock-free
	// ones slower, and the deny ratio 0.55-0.7 where RunParallel gives 0.25.
	ratioChunk = 20000
	// minRatioBlocks is the fewest blocks whose median HotKeyRatio reports.
	minRatioBlocks = 9
	// probeChunk is how many calls each goroutine makes in the one block of
	// HotKeyRatio at b.N = 1: a probe short enough that testing never
	// reports it under a benchtime of a duration (see HotKeyRatio).
	probeChunk = 100
)

// Median returns the median of xs, which it sorts; NaN when xs is empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// checkHotKey fails b unless at least 99% of calls passed (allow) or none
// did (deny).
func checkHotKey(b *testing.B, allow bool, passed, calls int64) {
	if allow {
		require.GreaterOrEqual(b, float64(passed), 0.99*float64(calls), "calls pass")
	} else {
		require.Zero(b, passed, "every call is denied")
	}
}

// HotKeyPolicies returns the two policies of the hot-key benchmarks for an
// algorithm: hit=allow, limit per window, more than the cores can ask for,
// so calls pass; hit=deny, 1 per hour, so every call but the first is
// denied. newLockFree and newMutex build the two limiters of a policy.
func HotKeyPolicies(limit int, window time.Duration,
	newLockFree func(limit int, window time.Duration) (Allower, error),
	newMutex func(limit int, window time.Duration) Allower) []HotKeyPolicy {
	policy := func(name string, allow bool, limit int, window time.Duration) HotKeyPolicy {
		return HotKeyPolicy{
			Name:  name,
			Allow: allow,
			LockFree: func(tb testing.TB) Allower {
				lim, err := newLockFree(limit, window)
				require.NoError(tb, err)
				return lim
			},
			Mutex: func() Allower { return newMutex(limit, window) },
		}
	}
	return []HotKeyPolicy{policy("allow", true, limit, window), policy("deny", false, 1, time.Hour)}
}
