package limitertest

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Allower is what the hot-key benchmarks call.
type Allower interface{ Allow(key string) bool }

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
				lim.Allow("hot")
				var passed, calls atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					var ok, n int64
					for pb.Next() {
						if lim.Allow("hot") {
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

// HotKeyRatio measures the same contention as HotKey but alternates the two
// implementations in rounds of a few thousand calls per goroutine within one
// benchmark, and reports the ratio of their total times, lockfree/mutex:
// load that comes and goes on a shared machine falls on both alike. Under 1
// the lock-free limiter is faster.
func HotKeyRatio(b *testing.B, policies []HotKeyPolicy) {
	for _, p := range policies {
		b.Run("hit="+p.Name, func(b *testing.B) {
			lf, mu := p.LockFree(b), p.Mutex()
			lf.Allow("hot")
			mu.Allow("hot")
			procs := runtime.GOMAXPROCS(0)
			const chunk = 2000 // calls per goroutine per round
			var t [2]time.Duration
			var passed [2]atomic.Int64
			rounds := max(2, b.N/(chunk*procs))
			b.ResetTimer()
			for r := range rounds {
				for i := range 2 {
					x := (r + i) % 2 // alternate which goes first
					lim := []Allower{lf, mu}[x]
					start := time.Now()
					var wg sync.WaitGroup
					for range procs {
						wg.Go(func() {
							n := int64(0)
							for range chunk {
								if lim.Allow("hot") {
									n++
								}
							}
							passed[x].Add(n)
						})
					}
					wg.Wait()
					t[x] += time.Since(start)
				}
			}
			b.StopTimer()
			calls := int64(rounds * procs * chunk)
			for x := range 2 {
				checkHotKey(b, p.Allow, passed[x].Load(), calls)
			}
			b.ReportMetric(float64(t[0])/float64(t[1]), "lockfree/mutex")
		})
	}
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
