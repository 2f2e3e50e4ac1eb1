package gcra_test

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
)

// mutexGCRA is the same GCRA with a sync.Mutex per key, the original design:
// the baseline the lock-free limiter must not lose to. T is a whole number
// of nanoseconds in the benchmark's policies, so it counts in nanoseconds.
type mutexGCRA struct {
	cells *xsync.MapOf[string, *mutexGCRACell]
	clock hotlimit.Clock
	t     int64 // T, ns
	tau   int64 // (burst − 1)·T, ns
}

type mutexGCRACell struct {
	mu  sync.Mutex
	tat int64
}

func newMutexGCRA(limit int, window time.Duration) *mutexGCRA {
	t := int64(window) / int64(limit)
	return &mutexGCRA{cells: xsync.NewMapOf[string, *mutexGCRACell](), clock: hotlimit.Monotonic, t: t, tau: int64(limit-1) * t}
}

func (l *mutexGCRA) Allow(key string) bool {
	c, ok := l.cells.Load(key)
	if !ok {
		c, _ = l.cells.LoadOrCompute(key, func() *mutexGCRACell { return new(mutexGCRACell) })
	}
	now := l.clock() // outside the lock, as the bench module's mutex port
	c.mu.Lock()
	defer c.mu.Unlock()
	base := max(c.tat, now)
	if base-now > l.tau {
		return false
	}
	c.tat = base + l.t
	return true
}

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process. hit=allow: 10^6 per 10 ms (T = 10 ns, exact
// ticks, a tolerance of 10 ms), more than the cores can ask for, so calls
// pass (all but those whose clock reading a loaded machine delayed by more
// than the tolerance: the mutex port judges a reading taken before it waits
// for the lock, and reports the share that passed as passed/op); hit=deny:
// 1 per hour, so every call but the first is denied. Compare the impl
// columns of one run (benchstat -col /impl).
func BenchmarkHotKey(b *testing.B) {
	for _, hit := range []struct {
		name   string
		limit  int
		window time.Duration
	}{
		{"allow", 1_000_000, 10 * time.Millisecond},
		{"deny", 1, time.Hour},
	} {
		for _, impl := range []struct {
			name string
			make func() interface{ Allow(string) bool }
		}{
			{"lockfree", func() interface{ Allow(string) bool } {
				lim, err := gcra.New(hit.limit, hit.window)
				require.NoError(b, err)
				return lim
			}},
			{"mutex", func() interface{ Allow(string) bool } { return newMutexGCRA(hit.limit, hit.window) }},
		} {
			b.Run(fmt.Sprintf("hit=%s/impl=%s", hit.name, impl.name), func(b *testing.B) {
				benchHotKey(b, impl.make(), hit.name == "allow")
			})
		}
	}
}

// benchHotKey runs Allow on one key from every goroutine and checks that
// at least 99% of the calls passed (allow) or every call was denied (deny).
func benchHotKey(b *testing.B, lim interface{ Allow(string) bool }, allow bool) {
	lim.Allow("hot")
	var passed, calls int64
	var mu sync.Mutex
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var p, n int64
		for pb.Next() {
			if lim.Allow("hot") {
				p++
			}
			n++
		}
		mu.Lock()
		passed, calls = passed+p, calls+n
		mu.Unlock()
	})
	b.StopTimer()
	b.ReportMetric(float64(passed)/float64(calls), "passed/op")
	if allow {
		require.GreaterOrEqual(b, float64(passed), 0.99*float64(calls), "calls pass")
	} else {
		require.Zero(b, passed, "every call is denied")
	}
}

// allower is what the hot-key benchmarks call.
type allower interface{ Allow(key string) bool }

// hotKeyHit is a policy of the hot-key benchmarks, with both limiters of it.
type hotKeyHit struct {
	name     string
	allow    bool // calls pass (else every call but the first is denied)
	lockfree func(b *testing.B) allower
	mutex    func() allower
}

// hotKeyHits are the policies of BenchmarkHotKeyRatio: hit=allow, as in
// BenchmarkHotKey, so calls pass; hit=deny, 1 per hour.
var hotKeyHits = []hotKeyHit{
	newHotKeyHit("allow", true, 1_000_000, 10*time.Millisecond),
	newHotKeyHit("deny", false, 1, time.Hour),
}

func newHotKeyHit(name string, allow bool, limit int, window time.Duration) hotKeyHit {
	return hotKeyHit{
		name:  name,
		allow: allow,
		lockfree: func(b *testing.B) allower {
			lim, err := gcra.New(limit, window)
			require.NoError(b, err)
			return lim
		},
		mutex: func() allower { return newMutexGCRA(limit, window) },
	}
}

// BenchmarkHotKeyRatio measures the same contention as BenchmarkHotKey but
// alternates the two implementations in rounds of a few thousand calls per
// goroutine within one benchmark, and reports the ratio of their total
// times, lockfree/mutex: load that comes and goes on a shared machine falls
// on both alike. Under 1 the lock-free limiter is faster.
func BenchmarkHotKeyRatio(b *testing.B) {
	for _, hit := range hotKeyHits {
		b.Run("hit="+hit.name, func(b *testing.B) {
			lf, mu := hit.lockfree(b), hit.mutex()
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
					lim := []allower{lf, mu}[x]
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
				if hit.allow {
					require.GreaterOrEqual(b, float64(passed[x].Load()), 0.99*float64(calls), "calls pass")
				} else {
					require.Zero(b, passed[x].Load(), "every call is denied")
				}
			}
			b.ReportMetric(float64(t[0])/float64(t[1]), "lockfree/mutex")
		})
	}
}
