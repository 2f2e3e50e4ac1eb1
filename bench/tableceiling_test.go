package bench

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/bench/internal/impl"
	"github.com/hotlimit/hotlimit/bench/internal/workload"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// The table ceiling: how far the limiters' table is, at 100k keys, from
// what a table laid out for one cache miss per lookup could give the
// one-word limiters. Beside go-limiter (the fastest peer at 100k keys) and
// tokenbucket, it times the part of a decision that the table decides, a
// lookup, a clock read and a CAS on the key's word, with no decision around
// it, on two tables holding the same keys:
//
//   - keyed: the limiters' own table (internal/keyed), a tokenbucket's
//     one-word cell looked up with keyed.Map.Load as Allow does: a slot of
//     the key's shard (the hash and a pointer to the node), and the node of
//     32 bytes (the word, the sweep list's link and, after them in the same
//     allocation, the key's length and bytes, up to 15), which never
//     straddles two cache lines;
//   - flat: open addressing with linear probing, each slot of 32 bytes
//     holding a tag (hash bits and the key's length), the key itself (up to
//     16 bytes) and the word, in one cache line: one miss where keyed has two
//     (slot, node).
//
// flat is a prototype: filled by one goroutine before the run, it never
// deletes, grows or inserts concurrently, which a table for the limiters
// must do under lookups that never lock (as keyed's does), and which costs
// on the lookup path too. Its figures are a
// ceiling on what such a table gives, not a measurement of one.

// flatTable is the prototype: 2^n slots, keys of 16 bytes or fewer.
type flatTable struct {
	seed  maphash.Seed
	mask  uint64
	slots []flatSlot
}

// flatSlot is one slot: tag is 0 while the slot is empty, then the key's
// hash with its low 6 bits replaced by 32 | len(key), stored after key is
// written, so a reader that loads a tag sees the key bytes it stands for.
type flatSlot struct {
	tag  atomic.Uint64
	key  [16]byte
	word atomic.Uint64
}

func newFlatTable(logSlots int) *flatTable {
	return &flatTable{seed: maphash.MakeSeed(), mask: 1<<logSlots - 1, slots: make([]flatSlot, 1<<logSlots)}
}

func (f *flatTable) tagAt(key string) (tag, i uint64) {
	h := maphash.String(f.seed, key)
	return h&^63 | 32 | uint64(len(key)), h >> 32 & f.mask
}

// word returns key's word, nil when the table does not hold key.
func (f *flatTable) word(key string) *atomic.Uint64 {
	tag, i := f.tagAt(key)
	for {
		s := &f.slots[i]
		t := s.tag.Load()
		if t == 0 {
			return nil
		}
		if t == tag && string(s.key[:t&31]) == key {
			return &s.word
		}
		i = (i + 1) & f.mask
	}
}

// insert adds key, which the table must not hold, from the only goroutine
// that writes the table.
func (f *flatTable) insert(key string) error {
	if len(key) > len(flatSlot{}.key) {
		return fmt.Errorf("flat table: key %q is over 16 bytes", key)
	}
	tag, i := f.tagAt(key)
	for f.slots[i].tag.Load() != 0 {
		i = (i + 1) & f.mask
	}
	copy(f.slots[i].key[:], key)
	f.slots[i].tag.Store(tag)
	return nil
}

// stamp writes now into w by CAS, as an admission writes its new word.
func stamp(w *atomic.Uint64, now int64) {
	for {
		if v := w.Load(); w.CompareAndSwap(v, uint64(now)) {
			return
		}
	}
}

// heapGrowth returns the bytes the heap grew by while build ran.
func heapGrowth(build func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	build()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return after.HeapAlloc - before.HeapAlloc
}

// BenchmarkTableCeiling times the four, 100k keys drawn uniformly, in
// alternating blocks (each block runs every one, in an order that rotates,
// GOMAXPROCS goroutines each making tableChunk calls), and reports each
// one's median ns per call, the median per-block ratio of each to
// go-limiter, and the heap bytes per key of the two tables:
//
//	go test -run '^$' -bench TableCeiling -cpu 2,8 -count 3 .
func BenchmarkTableCeiling(b *testing.B) {
	keys := workload.Keys(manyKeys)
	golim, err := tableGoLimiter.New(manyAllow, impl.Options{})
	require.NoError(b, err)
	defer golim.Close()
	tb, err := tokenbucket.New(manyAllow.Limit, manyAllow.Window)
	require.NoError(b, err)
	km := keyed.New[atomic.Uint64](nil, nil, hotlimit.Options{})
	keyedBytes := heapGrowth(func() {
		for _, k := range keys {
			km.Get(k) // the map keeps a copy of k
		}
	})
	var flat *flatTable
	flatBytes := heapGrowth(func() {
		flat = newFlatTable(17) // 131072 slots: 100k keys at a load of 0.76
		for _, k := range keys {
			require.NoError(b, flat.insert(k))
		}
	})
	// go-limiter keeps the caller's string: its first call of each key is
	// with a copy, so that its lookups compare the key's bytes as the
	// others' do (see newFixture).
	for _, k := range keys {
		golim.Allow(strings.Clone(k))
		tb.Allow(k)
	}
	variants := []struct {
		name string
		call func(key string)
	}{
		{"golimiter", func(k string) { golim.Allow(k) }},
		{"tokenbucket", func(k string) { tb.Allow(k) }},
		{"keyed", func(k string) { stamp(km.Load(k), hotlimit.Monotonic()) }},
		{"flat", func(k string) { stamp(flat.word(k), hotlimit.Monotonic()) }},
	}
	procs := runtime.GOMAXPROCS(0)
	// At b.N = 1 one short block: testing makes this call before it sets
	// GOMAXPROCS to the first -cpu value, and reports it if it lasted the
	// benchtime, which tableMinBlocks full blocks do (see
	// limitertest.HotKeyRatio).
	chunk, minBlocks := tableChunk, tableMinBlocks
	if b.N == 1 {
		chunk, minBlocks = tableProbeChunk, 1
	}
	blocks := max(minBlocks, b.N/(chunk*procs*len(variants)))
	ns := make([][]float64, len(variants))
	ratios := make([][]float64, len(variants))
	b.ResetTimer()
	for k := range blocks {
		t := make([]time.Duration, len(variants))
		for j := range variants {
			x := (k + j) % len(variants)
			t[x] = tableHalf(procs, chunk, keys, variants[x].call)
			ns[x] = append(ns[x], float64(t[x])/float64(procs*chunk))
		}
		for x := range variants {
			ratios[x] = append(ratios[x], float64(t[x])/float64(t[0]))
		}
	}
	b.StopTimer()
	tableRuns = append(tableRuns, tableRun{n: b.N, calls: int64(blocks * len(variants) * procs * chunk)})
	for x, v := range variants {
		b.ReportMetric(limitertest.Median(ns[x]), v.name+"-ns/call")
		if x > 0 {
			b.ReportMetric(limitertest.Median(ratios[x]), v.name+"/golimiter")
		}
	}
	b.ReportMetric(float64(keyedBytes)/float64(len(keys)), "keyed-B/key")
	b.ReportMetric(float64(flatBytes)/float64(len(keys)), "flat-B/key")
}

const (
	// tableChunk is how many calls each goroutine makes in one variant's
	// share of a block of BenchmarkTableCeiling: a few milliseconds.
	tableChunk = 20000
	// tableMinBlocks is the fewest blocks whose medians it reports.
	tableMinBlocks = 9
	// tableProbeChunk is tableChunk in the one block at b.N = 1.
	tableProbeChunk = 100
)

// tableGoLimiter is the go-limiter of BenchmarkTableCeiling (a variable for
// TestTableCeilingGoLimiterHoldsCopiesOfTheTimedKeys).
var tableGoLimiter = impl.GoLimiter()

// tableRun is one call of BenchmarkTableCeiling: its b.N and the calls it
// made; tableRuns lists them, for TestTableCeilingProbesAtOneIteration.
type tableRun struct {
	n     int
	calls int64
}

var tableRuns []tableRun

// tableHalf runs procs goroutines making chunk calls each, on keys drawn
// uniformly, started together once all are running, and returns the wall
// time from the start to the last one's end.
func tableHalf(procs, chunk int, keys []string, call func(string)) time.Duration {
	var ready atomic.Int64
	var gate atomic.Bool
	var done sync.WaitGroup
	done.Add(procs)
	for range procs {
		go func() {
			defer done.Done()
			r := workload.NewRand()
			ready.Add(1)
			for !gate.Load() {
				runtime.Gosched()
			}
			for range chunk {
				call(keys[r.Uniform(len(keys))])
			}
		}()
	}
	for ready.Load() < int64(procs) {
		runtime.Gosched()
	}
	start := time.Now()
	gate.Store(true)
	done.Wait()
	return time.Since(start)
}
