package slidinglog_test

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
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

// hotKeyPolicies: hit=allow at slidinglog.MaxLimit per 1 ms, hit=deny at 1 per hour (see
// limitertest.HotKeyPolicies).
var hotKeyPolicies = limitertest.HotKeyPolicies(slidinglog.MaxLimit, time.Millisecond,
	func(limit int, window time.Duration) (limitertest.Allower, error) {
		return slidinglog.New(limit, window)
	},
	func(limit int, window time.Duration) limitertest.Allower { return newMutexLog(limit, window) })

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./slidinglog/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in blocks within one benchmark and
// reports lockfree/mutex, the median of the per-block ratios (see
// limitertest.HotKeyRatio); under 1 the lock-free limiter is faster:
//
//	go test -run '^$' -bench HotKeyRatio -cpu 2,4,8 -count 4 .
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }
