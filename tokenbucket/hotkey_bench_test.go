package tokenbucket_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/puzpuzpuz/xsync/v3"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// mutexBucket is the token bucket with a sync.Mutex per key, the original
// design, as the bench module's impl=mutex ports it: a float64 bucket
// (capacity limit, refilled continuously at limit per window, a new key
// starts full) in an xsync.MapOf. No eviction: the benchmarks hold one key.
type mutexBucket struct {
	cells    *xsync.MapOf[string, *mutexBucketCell]
	clock    hotlimit.Clock
	capacity float64
	perNanos float64 // tokens per nanosecond
}

// mutexBucketCell is one key's bucket; every field is read and written with
// mu held.
type mutexBucketCell struct {
	mu     sync.Mutex
	tokens float64
	last   int64 // clock reading of the last refill
}

func newMutexBucket(limit int, window time.Duration) *mutexBucket {
	return &mutexBucket{
		cells:    xsync.NewMapOf[string, *mutexBucketCell](),
		clock:    hotlimit.Monotonic,
		capacity: float64(limit),
		perNanos: float64(limit) / float64(window),
	}
}

func (l *mutexBucket) Allow(key string) bool {
	c, ok := l.cells.Load(key)
	if !ok {
		c, _ = l.cells.LoadOrCompute(key, func() *mutexBucketCell {
			return &mutexBucketCell{tokens: l.capacity, last: l.clock()}
		})
	}
	now := l.clock() // outside the lock, as the bench module's mutex port
	c.mu.Lock()
	defer c.mu.Unlock()
	if now > c.last {
		c.tokens = min(l.capacity, c.tokens+float64(now-c.last)*l.perNanos)
		c.last = now
	}
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

// hotKeyPolicies: hit=allow at tokenbucket.MaxLimit per 1 ms (a token per
// nanosecond, more than the cores can take), hit=deny at 1 per hour (see
// limitertest.HotKeyPolicies).
var hotKeyPolicies = limitertest.HotKeyPolicies(tokenbucket.MaxLimit, tokenbucket.MinWindow,
	func(limit int, window time.Duration) (limitertest.Allower, error) {
		return tokenbucket.New(limit, window)
	},
	func(limit int, window time.Duration) limitertest.Allower { return newMutexBucket(limit, window) })

// BenchmarkHotKey: parallel Allow on one key, lock-free against the mutex
// port in the same process (see limitertest.HotKey):
//
//	go test -run '^$' -bench 'HotKey$' -benchmem -cpu 2,4,8 -count 5 ./tokenbucket/ > hot.txt
//	benchstat -col /impl hot.txt
func BenchmarkHotKey(b *testing.B) { limitertest.HotKey(b, hotKeyPolicies) }

// BenchmarkHotKeyRatio alternates the two in rounds within one benchmark and
// reports lockfree/mutex (see limitertest.HotKeyRatio); under 1 the
// lock-free limiter is faster.
func BenchmarkHotKeyRatio(b *testing.B) { limitertest.HotKeyRatio(b, hotKeyPolicies) }

// BenchmarkFloor compares serial Allow on one key, every call admitted, with
// the sum of its parts: an xsync.MapOf Load of an existing key, one
// hotlimit.Monotonic and one uncontended CompareAndSwap, the least an
// admission of this design can cost. It alternates the four in rounds, so
// that load that comes and goes on a shared machine falls on all alike, and
// reports allow/parts, the floor ratio (1 would be no overhead at all), and
// each part's ns:
//
//	go test -run '^$' -bench 'Floor$' -count 5 ./tokenbucket/
func BenchmarkFloor(b *testing.B) {
	const key = "user-0000000" // the bench module's key 0
	lim, err := tokenbucket.New(tokenbucket.MaxLimit, tokenbucket.MinWindow)
	require.NoError(b, err)
	require.True(b, lim.Allow(key))
	m := xsync.NewMapOf[string, *atomic.Uint64]()
	m.Store(key, new(atomic.Uint64))
	var word atomic.Uint64
	var denied, missed int
	parts := []func(n int){
		func(n int) { // allow
			for range n {
				if !lim.Allow(key) {
					denied++
				}
			}
		},
		func(n int) { // mapload
			for range n {
				if _, ok := m.Load(key); !ok {
					missed++
				}
			}
		},
		func(n int) { // monotonic
			for range n {
				hotlimit.Monotonic()
			}
		},
		func(n int) { // cas
			v := word.Load()
			for range n {
				word.CompareAndSwap(v, v+1)
				v++
			}
		},
	}
	const chunk = 1000
	var t [4]time.Duration
	rounds := max(2, b.N/chunk)
	b.ReportAllocs()
	b.ResetTimer()
	for r := range rounds {
		for i := range parts {
			x := (r + i) % len(parts) // rotate which goes first
			start := time.Now()
			parts[x](chunk)
			t[x] += time.Since(start)
		}
	}
	b.StopTimer()
	require.Zero(b, denied, "every Allow passes")
	require.Zero(b, missed, "every map Load finds the key")
	require.Equal(b, uint64(rounds*chunk), word.Load(), "every CAS succeeded")
	calls := float64(rounds * chunk)
	b.ReportMetric(float64(t[0])/float64(t[1]+t[2]+t[3]), "allow/parts")
	for i, name := range []string{"allow-ns", "mapload-ns", "monotonic-ns", "cas-ns"} {
		b.ReportMetric(float64(t[i])/calls, name)
	}
}
