package fixedwindow_test

import (
	"sync"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
	"github.com/stretchr/testify/require"

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

// hotKeyPolicies are the policies of the hot-key benchmarks: hit=allow,
// fixedwindow.MaxLimit per 10 ms, more than the cores can ask for, so calls pass; hit=deny, 1 per
// hour, so every call but the first is denied.
var hotKeyPolicies = []limitertest.HotKeyPolicy{
	hotKeyPolicy("allow", true, fixedwindow.MaxLimit, 10*time.Millisecond),
	hotKeyPolicy("deny", false, 1, time.Hour),
}

func hotKeyPolicy(name string, allow bool, limit int, window time.Duration) limitertest.HotKeyPolicy {
	return limitertest.HotKeyPolicy{
		Name:  name,
		Allow: allow,
		LockFree: func(tb testing.TB) limitertest.Allower {
			lim, err := fixedwindow.New(limit, window)
			require.NoError(tb, err)
			return lim
		},
		Mutex: func() limitertest.Allower { return newMutexWindow(limit, window) },
	}
}

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./fixedwindow/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in rounds within one benchmark and
// reports lockfree/mutex (see limitertest.HotKeyRatio); under 1 the
// lock-free limiter is faster.
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }
