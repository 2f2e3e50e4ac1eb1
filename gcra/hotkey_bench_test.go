package gcra_test

import (
	"sync"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
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

// hotKeyPolicies: hit=allow at 1,000,000 per 10 ms, hit=deny at 1 per hour (see
// limitertest.HotKeyPolicies).
var hotKeyPolicies = limitertest.HotKeyPolicies(1_000_000, 10*time.Millisecond,
	func(limit int, window time.Duration) (limitertest.Allower, error) { return gcra.New(limit, window) },
	func(limit int, window time.Duration) limitertest.Allower { return newMutexGCRA(limit, window) })

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./gcra/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in blocks within one benchmark and
// reports lockfree/mutex, the median of the per-block ratios (see
// limitertest.HotKeyRatio); under 1 the lock-free limiter is faster:
//
//	go test -run '^$' -bench HotKeyRatio -cpu 2,4,8 -count 4 .
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }
