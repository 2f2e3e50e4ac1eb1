package slidingcounter_test

import (
	"sync"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// mutexCounter is the same sliding counter with a sync.Mutex per key, the
// original design: the baseline the lock-free limiter must not lose to.
type mutexCounter struct {
	cells  *xsync.MapOf[string, *mutexCounterCell]
	clock  hotlimit.Clock
	limit  int64
	window int64
}

type mutexCounterCell struct {
	mu               sync.Mutex
	index, prev, cur int64
}

func newMutexCounter(limit int, window time.Duration) *mutexCounter {
	return &mutexCounter{cells: xsync.NewMapOf[string, *mutexCounterCell](), clock: hotlimit.Monotonic, limit: int64(limit), window: int64(window)}
}

func (l *mutexCounter) Allow(key string) bool {
	c, ok := l.cells.Load(key)
	if !ok {
		c, _ = l.cells.LoadOrCompute(key, func() *mutexCounterCell { return new(mutexCounterCell) })
	}
	now := l.clock() // outside the lock, as the bench module's mutex port
	c.mu.Lock()
	defer c.mu.Unlock()
	index := now / l.window
	switch {
	case index == c.index+1:
		c.index, c.prev, c.cur = index, c.cur, 0
	case index > c.index:
		c.index, c.prev, c.cur = index, 0, 0
	}
	e := max(now-c.index*l.window, 0)
	if c.prev*(l.window-e)/l.window+c.cur+1 > l.limit {
		return false
	}
	c.cur++
	return true
}

// hotKeyPolicies: hit=allow at slidingcounter.MaxLimit per 1 ms, hit=deny at 1 per hour (see
// limitertest.HotKeyPolicies).
var hotKeyPolicies = limitertest.HotKeyPolicies(slidingcounter.MaxLimit, time.Millisecond,
	func(limit int, window time.Duration) (limitertest.Allower, error) {
		return slidingcounter.New(limit, window)
	},
	func(limit int, window time.Duration) limitertest.Allower { return newMutexCounter(limit, window) })

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./slidingcounter/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in blocks within one benchmark and
// reports lockfree/mutex, the median of the per-block ratios (see
// limitertest.HotKeyRatio); under 1 the lock-free limiter is faster:
//
//	go test -run '^$' -bench HotKeyRatio -cpu 2,4,8 -count 4 .
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }
