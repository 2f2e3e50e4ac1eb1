package tokenbucket_test

import (
	"slices"
	"strings"
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
// the sum of its parts: an xsync.MapOf Load of an existing key (the same key,
// in a map of the same shape that, like the limiter's, holds its own copy of
// the key, so that the Load compares the key's bytes rather than stopping at
// equal pointers), one hotlimit.Monotonic (the limiter's clock) and one
// successful uncontended CompareAndSwap, the least an admission of this
// design can cost.
//
// It runs in blocks: each block times floorChunk calls of each of the four,
// in an order that rotates from block to block, and yields one ratio,
// allow/(mapload+monotonic+cas), from its own four timings. A burst of load
// on a shared machine lands in one or two blocks and moves their ratios, up
// or down; the median of the blocks' ratios, reported as allow/parts (1
// would be no overhead at all), is the typical block's and stays put. (Load
// that lasts the whole run, a busy sibling hardware thread, slows all four
// unevenly and does move it; so can a rebuild that only moves the code of
// Allow, by a few hundredths, on some processors.) Beside
// it: the ratios' lower and upper quartiles (allow/parts-p25, -p75), the
// median of the blocks' allow − parts in ns per call (left-ns: what Allow
// adds to its parts), and each of the four's median ns per call:
//
//	go test -run '^$' -bench 'Floor$' -count 6 ./tokenbucket/
func BenchmarkFloor(b *testing.B) {
	const key = "user-0000000" // the bench module's key 0
	lim, err := tokenbucket.New(tokenbucket.MaxLimit, tokenbucket.MinWindow)
	require.NoError(b, err)
	require.True(b, lim.Allow(key))
	m := xsync.NewMapOf[string, *atomic.Uint64]()
	m.Store(strings.Clone(key), new(atomic.Uint64)) // its own copy, as the limiter keeps
	var word atomic.Uint64
	var denied, missed int
	parts := [...]func(n int){
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
	blocks := max(9, b.N/floorChunk)
	ns := make([][len(parts)]float64, blocks) // ns per call, per block and part
	b.ReportAllocs()
	b.ResetTimer()
	for r := range ns {
		for i := range parts {
			x := (r + i) % len(parts) // rotate which goes first
			start := time.Now()
			parts[x](floorChunk)
			ns[r][x] = float64(time.Since(start)) / floorChunk
		}
	}
	b.StopTimer()
	require.Zero(b, denied, "every Allow passes")
	require.Zero(b, missed, "every map Load finds the key")
	require.Equal(b, uint64(blocks*floorChunk), word.Load(), "every CAS succeeded")
	ratios, left := make([]float64, blocks), make([]float64, blocks)
	for r, t := range ns {
		ratios[r] = t[0] / (t[1] + t[2] + t[3])
		left[r] = t[0] - (t[1] + t[2] + t[3])
	}
	slices.Sort(ratios)
	slices.Sort(left)
	b.ReportMetric(quantile(ratios, 0.5), "allow/parts")
	b.ReportMetric(quantile(ratios, 0.25), "allow/parts-p25")
	b.ReportMetric(quantile(ratios, 0.75), "allow/parts-p75")
	b.ReportMetric(quantile(left, 0.5), "left-ns")
	for i, name := range []string{"allow-ns", "mapload-ns", "monotonic-ns", "cas-ns"} {
		col := make([]float64, blocks)
		for r := range ns {
			col[r] = ns[r][i]
		}
		slices.Sort(col)
		b.ReportMetric(quantile(col, 0.5), name)
	}
}

// floorChunk is the calls of each of BenchmarkFloor's four per block: some
// tens of microseconds each, far above the cost of the two clock readings
// that time them, and short enough that a block is rarely interrupted.
const floorChunk = 1000

// quantile returns the q-quantile of sorted, the element at rank
// ⌊q·(len−1)⌋ (the median of an odd count is its middle element).
func quantile(sorted []float64, q float64) float64 {
	return sorted[int(q*float64(len(sorted)-1))]
}
