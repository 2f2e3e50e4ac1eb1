package slidinglog_test

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// mutexLog is the sliding log ported to a mutex per key, the baseline of
// BenchmarkHotKey: the same ring of limit times per key, in an xsync.MapOf,
// each ring guarded by its own sync.Mutex. A request at now passes when the
// oldest of the last limit logged times is at or before now − window; it is
// then logged at the later of now and the newest time. No eviction: the
// benchmark holds one key.
type mutexLog struct {
	cells  *xsync.MapOf[string, *mutexRing]
	limit  int
	window int64
	clock  hotlimit.Clock
}

// mutexRing is one key's log; every field is read and written with mu held.
type mutexRing struct {
	mu    sync.Mutex
	times []int64 // times[head] is the oldest of the last len(times)
	head  int
}

func newMutexLog(limit int, window time.Duration) *mutexLog {
	return &mutexLog{cells: xsync.NewMapOf[string, *mutexRing](), limit: limit, window: int64(window), clock: hotlimit.Monotonic}
}

func (l *mutexLog) Allow(key string) bool {
	r, ok := l.cells.Load(key)
	if !ok {
		r, _ = l.cells.LoadOrCompute(key, func() *mutexRing {
			times := make([]int64, l.limit)
			for i := range times {
				times[i] = math.MinInt64 / 2
			}
			return &mutexRing{times: times}
		})
	}
	now := l.clock()
	r.mu.Lock()
	newest := r.times[(r.head+l.limit-1)%l.limit]
	t := max(now, newest)
	ok = r.times[r.head] <= t-l.window
	if ok {
		r.times[r.head] = t
		r.head = (r.head + 1) % l.limit
	}
	r.mu.Unlock()
	return ok
}

// BenchmarkHotKey times parallel Allow on one key, the sliding log against
// its mutex-per-key port (impl=mutex) in the same process: with hit=allow
// (MaxLimit per 1 ms: every call passes, so every call logs) and hit=deny
// (1 per hour, spent before timing: every call is denied). allowed/op
// reports the fraction of timed calls that passed, 1 and 0 by construction;
// the fixture is asserted before timing. Compare with
//
//	go test -run '^$' -bench HotKey -benchmem -cpu 2,4,8 -count 5 ./slidinglog/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) {
	type allower interface{ Allow(string) bool }
	impls := []struct {
		name string
		make func(limit int, window time.Duration) allower
	}{
		{"lockfree", func(limit int, window time.Duration) allower {
			l, err := slidinglog.New(limit, window)
			require.NoError(b, err)
			return l
		}},
		{"mutex", func(limit int, window time.Duration) allower { return newMutexLog(limit, window) }},
	}
	for _, hit := range []struct {
		name   string
		limit  int
		window time.Duration
		allow  bool
	}{
		{"allow", slidinglog.MaxLimit, time.Millisecond, true},
		{"deny", 1, time.Hour, false},
	} {
		for _, im := range impls {
			b.Run("hit="+hit.name+"/impl="+im.name, func(b *testing.B) {
				lim := im.make(hit.limit, hit.window)
				if !hit.allow {
					require.True(b, lim.Allow("hot"), "the first call passes")
				}
				require.Equal(b, hit.allow, lim.Allow("hot"), "fixture")
				var allowed atomic.Int64
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					n := int64(0)
					for pb.Next() {
						if lim.Allow("hot") {
							n++
						}
					}
					allowed.Add(n)
				})
				b.StopTimer()
				b.ReportMetric(float64(allowed.Load())/float64(b.N), "allowed/op")
				if hit.allow {
					require.Equal(b, int64(b.N), allowed.Load(), "every call passes")
				} else {
					require.Zero(b, allowed.Load(), "every call is denied")
				}
			})
		}
	}
}
