package bench

import (
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/bench/internal/workload"
)

// The auto-sweep scenario: 100 per minute, WithAutoSweep(1<<16). A key is
// idle (evictable) 0.6 s after its one request.
const (
	sweepLimit   = 100
	sweepWindow  = time.Minute
	sweepMinKeys = 1 << 16
	sweepMaxKeys = 1 << 21 // the cap of impl=tokenbucket-maxkeys: more than a run inserts
)

// sweepLimiter is what each algorithm's New returns, as far as this
// benchmark needs.
type sweepLimiter interface {
	Allow(key string) bool
	Len() int
}

func newSweep[L sweepLimiter](newLimiter func(int, time.Duration, ...hotlimit.Option) (L, error)) func() (sweepLimiter, error) {
	return func() (sweepLimiter, error) {
		return newLimiter(sweepLimit, sweepWindow, hotlimit.WithAutoSweep(sweepMinKeys))
	}
}

var sweepAlgorithms = []struct {
	name string
	new  func() (sweepLimiter, error)
	noGC bool // the garbage collector off during the timed calls
}{
	{"tokenbucket", newSweep(tokenbucket.New), false},
	// The same with the garbage collector off while the calls are timed
	// (debug.SetGCPercent(-1); the run's garbage, some 250 MB at 2M keys,
	// is collected after): its stalls are the table's copies and the
	// machine's, so that beside the row above it tells the collector's
	// share of the longest call.
	{"tokenbucket-nogc", newSweep(tokenbucket.New), true},
	// With a key cap above what the run holds, whose table is sized up
	// front (for min(cap, 2^20) keys, still more than a run holds): the same
	// sweep without the growth of the map's table, whose shards copy their
	// arrays on the inserting goroutine.
	{"tokenbucket-maxkeys", func() (sweepLimiter, error) {
		return tokenbucket.New(sweepLimit, sweepWindow, hotlimit.WithAutoSweep(sweepMinKeys), hotlimit.WithMaxKeys(sweepMaxKeys))
	}, false},
	// Both: the table sized up front and the collector off, so that what
	// is left of the longest call is neither's (not in make bench's default
	// set).
	{"tokenbucket-maxkeys-nogc", func() (sweepLimiter, error) {
		return tokenbucket.New(sweepLimit, sweepWindow, hotlimit.WithAutoSweep(sweepMinKeys), hotlimit.WithMaxKeys(sweepMaxKeys))
	}, true},
	// No limiter at all: each call allocates what an insertion does and
	// keeps about as many keys as the others hold, with no map and no sweep.
	// Its stalls are the garbage collector's and the machine's: the floor
	// under every other row.
	{"alloc-only", func() (sweepLimiter, error) { return newAllocOnly(1 << 19), nil }, false},
	{"gcra", newSweep(gcra.New), false},
	{"fixedwindow", newSweep(fixedwindow.New), false},
	{"slidingcounter", newSweep(slidingcounter.New), false},
	{"slidinglog", newSweep(slidinglog.New), false},
}

// allocOnly is the baseline of BenchmarkAutoSweep: Allow allocates the one
// object an insertion into a keyed map allocates for the benchmark's keys,
// of 16 to 31 bytes (the node holding the cell and its link, with the key's
// length and bytes after them: 48 bytes; the table's slot is part of a
// shard's array, allocated only as the shard grows), and keeps the last
// len(ring) nodes, linked newest first as a sweep list links them, as a
// limiter keeps the keys that are not yet idle; it always passes.
type allocOnly struct {
	ring []*allocNode
	next int // the ring's oldest node, which the next call replaces
	held int
}

type allocNode struct {
	_    uint64 // the cell's word, for the node's size
	next *allocNode
	size uint8    // the key's length
	b    [31]byte // the key's copy
}

func newAllocOnly(keep int) *allocOnly { return &allocOnly{ring: make([]*allocNode, keep)} }

func (a *allocOnly) Allow(key string) bool {
	n := len(a.ring)
	newest := a.ring[(a.next+n-1)%n]
	if a.ring[a.next] != nil {
		// Unlink the oldest node from the one after it, as a sweep unlinks
		// an idle key, so that the list holds the ring's nodes only.
		a.ring[(a.next+1)%n].next = nil // the ring is full: every slot holds a node
	} else {
		a.held++
	}
	node := &allocNode{next: newest}
	node.size = uint8(copy(node.b[:], key)) // the benchmark's keys fit
	a.ring[a.next] = node
	a.next = (a.next + 1) % n
	return true
}

func (a *allocOnly) Len() int { return a.held }

// BenchmarkAutoSweep times every call singly while b.N new keys are inserted
// into a limiter of 100 per minute with WithAutoSweep(1<<16), from one
// goroutine on the real clock: once the threshold is reached, insertions
// take turns to sweep a few keys on the caller's goroutine. Run it with -benchtime 2000000x (2M keys).
// Besides ns/op (the mean) it reports the latency of a single Allow: p50-ns,
// p99.9-ns and max-ns, over-1ms (calls that took longer than 1 ms), keys (b.N)
// and held (keys held at the end, which auto-sweep bounds).
func BenchmarkAutoSweep(b *testing.B) {
	for _, alg := range sweepAlgorithms {
		b.Run("impl="+alg.name, func(b *testing.B) {
			lim, err := alg.new()
			require.NoError(b, err)
			keys := make([]string, b.N)
			for i := range keys {
				keys[i] = "sweep-" + workload.Key(i)
			}
			lat := make([]int64, b.N)
			denied := 0
			if alg.noGC {
				runtime.GC()
				defer runtime.GC() // the run's garbage, once the percent is restored
				defer debug.SetGCPercent(debug.SetGCPercent(-1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i, k := range keys {
				t0 := hotlimit.Monotonic()
				ok := lim.Allow(k)
				lat[i] = hotlimit.Monotonic() - t0
				if !ok {
					denied++
				}
			}
			b.StopTimer()
			if denied > 0 {
				b.Errorf("%d of %d first calls of new keys denied", denied, b.N)
			}
			st := latencies(lat)
			b.ReportMetric(float64(st.p50), "p50-ns")
			b.ReportMetric(float64(st.p999), "p99.9-ns")
			b.ReportMetric(float64(st.max), "max-ns")
			b.ReportMetric(float64(st.over1ms), "over-1ms")
			b.ReportMetric(float64(b.N), "keys")
			b.ReportMetric(float64(lim.Len()), "held")
		})
	}
}

// latencyStats are the order statistics of a set of call latencies, in ns.
type latencyStats struct {
	p50, p999, max int64
	over1ms        int
}

// latencies sorts lat in place and returns its statistics: the p-quantile is
// the smallest value that at least p of the calls do not exceed.
func latencies(lat []int64) latencyStats {
	if len(lat) == 0 {
		return latencyStats{}
	}
	slices.Sort(lat)
	q := func(p float64) int64 {
		i := int(p*float64(len(lat))+0.999999999) - 1
		return lat[min(max(i, 0), len(lat)-1)]
	}
	over, _ := slices.BinarySearch(lat, int64(time.Millisecond)+1)
	return latencyStats{p50: q(0.5), p999: q(0.999), max: lat[len(lat)-1], over1ms: len(lat) - over}
}

func TestLatencies(t *testing.T) {
	lat := make([]int64, 2000)
	for i := range lat {
		lat[i] = int64(2000 - i) // 2000 … 1, shuffled order does not matter
	}
	lat[0] = int64(5 * time.Millisecond)
	lat[1] = int64(time.Millisecond) // exactly 1 ms is not over it
	st := latencies(lat)
	require.Equal(t, int64(1000), st.p50, "half of 1 … 2000 is at most 1000")
	require.Equal(t, int64(1998), st.p999, "the 1998th smallest: 2 values are above it")
	require.Equal(t, int64(5*time.Millisecond), st.max)
	require.Equal(t, 1, st.over1ms)
	require.Equal(t, latencyStats{}, latencies(nil))
}

// TestAllocOnlyAllocatesWhatAnInsertionDoes: the baseline's Allow allocates
// as many objects, and as many bytes, as tokenbucket's first Allow of a key,
// an insertion into its keyed map, so that the baseline's stalls are those
// of the same allocations.
func TestAllocOnlyAllocatesWhatAnInsertionDoes(t *testing.T) {
	const warm, runs = 10_000, 1000
	keys := make([]string, warm+runs+1)
	for i := range keys {
		keys[i] = "sweep-" + workload.Key(i)
	}
	// Every call takes the next key: a first call, an insertion. The warm
	// calls give every shard its array, so that the shards' growths, which
	// a run of many insertions amortizes, stay below one per run.
	per := func(allow func(string) bool) float64 {
		i := 0
		for ; i < warm; i++ {
			require.True(t, allow(keys[i]))
		}
		return testing.AllocsPerRun(runs, func() {
			allow(keys[i])
			i++
		})
	}
	tb, err := tokenbucket.New(sweepLimit, sweepWindow)
	require.NoError(t, err)
	insertion := per(tb.Allow)
	require.NotZero(t, insertion)
	require.Equal(t, insertion, per(newAllocOnly(1<<19).Allow))

	// The bytes, on the capped limiter of impl=tokenbucket-maxkeys, whose
	// shards' arrays, sized up front, never grow: past the warm calls, an
	// insertion allocates its node alone.
	bytes := func(allow func(string) bool) uint64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		for i := range warm {
			require.True(t, allow(keys[i]))
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := warm; i < warm+runs; i++ {
			allow(keys[i])
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / runs
	}
	capped, err := tokenbucket.New(sweepLimit, sweepWindow, hotlimit.WithAutoSweep(sweepMinKeys), hotlimit.WithMaxKeys(sweepMaxKeys))
	require.NoError(t, err)
	node := bytes(capped.Allow)
	require.NotZero(t, node)
	require.Equal(t, node, bytes(newAllocOnly(1<<19).Allow), "bytes per call")
}

// TestAllocOnlyKeepsItsRingOnly: the baseline's list holds the last
// len(ring) nodes and no older one, as a sweep list holds only the keys
// not yet swept, so that the garbage collector marks as many nodes as the
// ring keeps.
func TestAllocOnlyKeepsItsRingOnly(t *testing.T) {
	for _, keep := range []int{2, 3, 8} {
		a := newAllocOnly(keep)
		for i := range 5 * keep {
			a.Allow(workload.Key(i))
			seen := map[*allocNode]bool{}
			for _, n := range a.ring {
				for ; n != nil && !seen[n]; n = n.next {
					seen[n] = true
				}
			}
			require.Equal(t, min(i+1, keep), len(seen), "keep %d, after %d calls", keep, i+1)
		}
		require.Equal(t, keep, a.Len())
	}
}
