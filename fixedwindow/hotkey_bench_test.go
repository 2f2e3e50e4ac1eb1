package fixedwindow_test

import (
	"sync"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// mutexWindow is the same fixed window with a sync.Mutex per key, the
// original design: the baseline the lock-free limiter must not lose to.
type mutexWindow struct {
	cells  *xsync.MapOf[string, *mutexWindowCell]
	clock  hotlimit.Clock
	limit  int64
	window int64
}

type mutexWindowCell struct {
	mu    sync.Mutex
	index int64
	count int64
}

func newMutexWindow(limit int, window time.Duration) *mutexWindow {
	return &mutexWindow{cells: xsync.NewMapOf[string, *mutexWindowCell](), clock: hotlimit.Monotonic, limit: int64(limit), window: int64(window)}
}

func (l *mutexWindow) Allow(key string) bool {
	c, ok := l.cells.Load(key)
	if !ok {
		c, _ = l.cells.LoadOrCompute(key, func() *mutexWindowCell { return new(mutexWindowCell) })
	}
	now := l.clock() // outside the lock, as the bench module's mutex port
	c.mu.Lock()
	defer c.mu.Unlock()
	index := now / l.window
	if index > c.index {
		c.index, c.count = index, 0
	}
	if c.count >= l.limit {
		return false
	}
	c.count++
	return true
}

// hotKeyPolicies: hit=allow at fixedwindow.MaxLimit per 10 ms, hit=deny at 1 per hour (see
// limitertest.HotKeyPolicies).
var hotKeyPolicies = limitertest.HotKeyPolicies(fixedwindow.MaxLimit, 10*time.Millisecond,
	func(limit int, window time.Duration) (limitertest.Allower, error) {
		return fixedwindow.New(limit, window)
	},
	func(limit int, window time.Duration) limitertest.Allower { return newMutexWindow(limit, window) })

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./fixedwindow/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in blocks within one benchmark and
// reports lockfree/mutex, the median of the per-block ratios (see
// limitertest.HotKeyRatio); under 1 the lock-free limiter is faster:
//
//	go test -run '^$' -bench HotKeyRatio -cpu 2,4,8 -count 4 .
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }
