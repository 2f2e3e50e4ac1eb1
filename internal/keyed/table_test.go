package keyed

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// The table's own tests: a model of it as a Go map, under random and fuzzed
// operations; a hammer of lock-free lookups against writers that grow,
// shrink and reuse the slots of one shard; and lookups stalled on an array
// that writers have since replaced.

type tnode = node[int64]

// tinsert inserts key if the table does not hold it, as publish does, and
// returns its node and whether it inserted it.
func tinsert(t *table[int64], key string) (*tnode, bool) {
	h := t.hash(key)
	s := t.lock(h)
	defer s.mu.Unlock()
	n, free := t.locked(s, h, key)
	if n != nil {
		return n, false
	}
	n = newNode[int64](key)
	t.insert(s, h, n, free)
	return n, true
}

// tdelete deletes key if the table holds it, as remove does, and reports
// whether it did.
func tdelete(t *table[int64], key string) bool {
	h := t.hash(key)
	s := t.lock(h)
	defer s.mu.Unlock()
	n, at := t.locked(s, h, key)
	if n == nil {
		return false
	}
	t.delete(s, h, at)
	return true
}

// treplace puts a fresh node in place of key's, as a revival does, and
// returns it, or nil when the table does not hold key.
func treplace(t *table[int64], key string) *tnode {
	h := t.hash(key)
	s := t.lock(h)
	defer s.mu.Unlock()
	n, at := t.locked(s, h, key)
	if n == nil {
		return nil
	}
	fresh := newNode[int64](key)
	t.put(s, at, fresh)
	return fresh
}

// shardKeys returns n keys of shard i of t, and others of other shards.
func shardKeys(t *table[int64], i, n int) []string {
	var keys []string
	for j := 0; len(keys) < n; j++ {
		k := "key" + strconv.Itoa(j)
		if int(t.hash(k)>>(64-shardBits)) == i {
			keys = append(keys, k)
		}
	}
	return keys
}

// checkTable checks t against model, the nodes it should hold: each found by
// a lookup, no other key found, each shard's counts true to its array, no
// key twice in an array, every array a power of two no smaller than the
// floor and at most three quarters used, and Size exact.
func checkTable(tb testing.TB, t *table[int64], model map[string]*tnode, absent []string) {
	tb.Helper()
	for k, n := range model {
		if got := t.load(k); got != n {
			tb.Fatalf("load(%q) = %p, want %p", k, got, n)
		}
	}
	for _, k := range absent {
		if _, ok := model[k]; !ok && t.load(k) != nil {
			tb.Fatalf("load(%q) found a key not held", k)
		}
	}
	held := 0
	for i := range t.shards {
		s, a := t.shards[i].Load(), t.arrays[i].Load()
		if s == nil {
			if a != nil {
				tb.Fatalf("shard %d: an array and no writers' state", i)
			}
			continue
		}
		if s.slots != &t.arrays[i] {
			tb.Fatalf("shard %d: its writers write another shard's array", i)
		}
		if a == nil {
			if s.used != 0 || s.held != 0 {
				tb.Fatalf("shard %d: no array, counts %d used %d held", i, s.used, s.held)
			}
			continue
		}
		if len(*a) < t.floor || len(*a)&(len(*a)-1) != 0 {
			tb.Fatalf("shard %d: %d slots, floor %d", i, len(*a), t.floor)
		}
		used, nodes, seen := 0, 0, map[string]bool{}
		for j := range *a {
			n := (*a)[j].node.Load()
			if n == nil {
				continue
			}
			used++
			if n == t.tomb {
				continue
			}
			nodes++
			if seen[n.key()] {
				tb.Fatalf("shard %d: key %q twice", i, n.key())
			}
			seen[n.key()] = true
			if (*a)[j].hash.Load() != t.hash(n.key()) {
				tb.Fatalf("shard %d: key %q under another hash", i, n.key())
			}
		}
		if used != s.used || nodes != s.held || used*4 > len(*a)*3 {
			tb.Fatalf("shard %d: %d used, %d held of %d slots; counted %d used, %d held", i, used, nodes, len(*a), s.used, s.held)
		}
		held += nodes
	}
	if held != len(model) || t.size() != len(model) {
		tb.Fatalf("%d nodes in the arrays, size %d, want %d", held, t.size(), len(model))
	}
}

// runOps applies ops to t and to a model, a Go map, checking t against it
// as it goes: an op's low two bits pick insert, delete, replace or lookup,
// the rest a key of keys.
func runOps(tb testing.TB, t *table[int64], keys []string, ops []uint16) {
	model := map[string]*tnode{}
	for i, op := range ops {
		k := keys[int(op>>2)%len(keys)]
		switch op & 3 {
		case 0:
			n, inserted := tinsert(t, k)
			if old, ok := model[k]; ok == inserted || ok && n != old {
				tb.Fatalf("op %d: insert(%q): inserted %v, held %v", i, k, inserted, ok)
			}
			model[k] = n
		case 1:
			_, ok := model[k]
			if tdelete(t, k) != ok {
				tb.Fatalf("op %d: delete(%q), held %v", i, k, ok)
			}
			delete(model, k)
		case 2:
			n := treplace(t, k)
			if _, ok := model[k]; ok != (n != nil) {
				tb.Fatalf("op %d: replace(%q), held %v", i, k, ok)
			}
			if n != nil {
				model[k] = n
			}
		case 3:
			if got := t.load(k); got != model[k] {
				tb.Fatalf("op %d: load(%q) = %p, want %p", i, k, got, model[k])
			}
		}
		if i%61 == 0 || i == len(ops)-1 {
			checkTable(tb, t, model, keys)
		}
	}
}

// TestTableModel: random operations, in phases that fill a shard (it
// grows), empty it (it shrinks back to its floor) and churn it (deleted
// slots reused, then shed by a rebuild), agree with a Go map, and the arrays
// stay true to their counts; with and without presizing (then no array
// grows).
func TestTableModel(t *testing.T) {
	for _, presize := range []int{0, 80000} {
		t.Run("presize="+strconv.Itoa(presize), func(t *testing.T) {
			var tb table[int64]
			tb.init(presize)
			keys := append(shardKeys(&tb, 3, 300), shardKeys(&tb, 9, 30)...)
			r := rand.New(rand.NewPCG(1, uint64(presize)))
			var ops []uint16
			for _, phase := range []struct{ insert, delete int }{{8, 1}, {1, 8}, {4, 4}, {8, 1}, {1, 8}, {5, 5}} {
				for range 3000 {
					op := uint16(r.IntN(len(keys)) << 2)
					switch x := r.IntN(12); {
					case x < phase.insert:
						ops = append(ops, op) // insert
					case x < phase.insert+phase.delete:
						ops = append(ops, op|1)
					case x < 11:
						ops = append(ops, op|3)
					default:
						ops = append(ops, op|2)
					}
				}
			}
			runOps(t, &tb, keys, ops)
			if presize == 0 {
				assert.Greater(t, tb.growths.Load(), int64(6), "the shard grew, shrank and shed tombstones")
			} else {
				assert.Zero(t, tb.growths.Load(), "sized up front")
			}
		})
	}
}

// FuzzTable: any sequence of operations (two bytes each) on keys of two
// shards agrees with a Go map.
func FuzzTable(f *testing.F) {
	f.Add([]byte{0, 0, 4, 0, 1, 0, 3, 0})
	// Fill a shard, delete half its keys, look up the rest past the
	// tombstones, and fill it again into them.
	var seed []byte
	for _, run := range []struct{ from, to, op int }{{0, 40, 0}, {0, 20, 1}, {20, 40, 3}, {0, 20, 0}, {0, 40, 2}, {0, 40, 3}} {
		for k := run.from; k < run.to; k++ {
			op := k<<2 | run.op
			seed = append(seed, byte(op), byte(op>>8))
		}
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		var tb table[int64]
		tb.init(0)
		keys := append(shardKeys(&tb, 0, 48), shardKeys(&tb, 1, 8)...)
		ops := make([]uint16, len(data)/2)
		for i := range ops {
			ops[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
		}
		runOps(t, &tb, keys, ops)
	})
}

// probeKeys returns n keys of shard i of t whose probe starts on the same
// slot as key's in an array of minSlots slots: in a shard's first arrays,
// they lie along one run of slots, key's among them.
func probeKeys(t *table[int64], i int, key string, n int) []string {
	start := t.hash(key) & (minSlots - 1)
	var keys []string
	for _, k := range shardKeys(t, i, 64*n) {
		if k != key && t.hash(k)&(minSlots-1) == start && len(keys) < n {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestTableLookupStalledOnAReplacedArray: a lookup that loaded its shard's
// array and stalled there, while writers deleted the keys before its key's
// slot, reused their slots, grew the array several times and put a fresh
// node in place of its key's, finds its key in the array it loaded (the
// node it held then: a dead one, to keyed, once replaced); one stalled on
// the current array, while only deletions and reuse of slots happened, finds
// it there past the tombstones; and a key deleted and inserted again under a
// stalled lookup is reported with its old node, its new one, or not held,
// never another key's node.
func TestTableLookupStalledOnAReplacedArray(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	const sh = 5
	key := shardKeys(&tb, sh, 1)[0]
	before := probeKeys(&tb, sh, key, 3) // inserted before key: its probe passes them
	for _, k := range before {
		tinsert(&tb, k)
	}
	n, _ := tinsert(&tb, key)
	h := tb.hash(key)
	// A lookup stalls on the current array: deletions of the keys before
	// key's slot leave tombstones, and an insertion reuses one.
	a := tb.array(h).Load()
	for _, k := range before {
		require.True(t, tdelete(&tb, k))
	}
	tinsert(&tb, before[1])
	require.Same(t, a, tb.array(h).Load(), "no replacement yet")
	assert.Same(t, n, tb.probe(a, h, key), "found past the tombstones in the array it loaded")
	// A lookup stalls on that array; then the shard grows many times over, a
	// key is deleted and inserted again, and key's node is replaced.
	other := before[1]
	oldOther := tb.load(other)
	for _, k := range shardKeys(&tb, sh, 200) {
		tinsert(&tb, k)
	}
	require.NotSame(t, a, tb.array(h).Load(), "the array was replaced")
	require.True(t, tdelete(&tb, other))
	newOther, _ := tinsert(&tb, other)
	fresh := treplace(&tb, key)
	assert.Same(t, n, tb.probe(a, h, key), "the stalled lookup finds the node key held when the array was replaced")
	assert.Same(t, fresh, tb.load(key), "a new lookup finds the fresh node")
	got := tb.probe(a, tb.hash(other), other)
	assert.True(t, got == nil || got == oldOther || got == newOther, "a key deleted and inserted again: its old node, its new one or none")
	// The shard shrinks under a lookup stalled on the grown array.
	b := tb.array(h).Load()
	for _, k := range shardKeys(&tb, sh, 200) {
		if k != key {
			tdelete(&tb, k)
		}
	}
	require.NotSame(t, b, tb.array(h).Load(), "the array shrank")
	assert.Same(t, fresh, tb.probe(b, h, key), "found in the array it loaded before the shrink")
	assert.Same(t, fresh, tb.load(key))
}

// TestTableHammer: lock-free lookups, under -race, against writers that fill
// and empty one shard over and over (so that it grows, shrinks and reuses
// its deleted slots under the lookups), replace the nodes of keys held
// throughout, and insert one key from several goroutines at once: a key held
// throughout is always found, with its own node; a lookup never returns
// another key's node; the inserters of one key all get one node, made once.
func TestTableHammer(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	keys := shardKeys(&tb, 0, 260)
	stable, churn := keys[:20], keys[20:]
	for _, k := range stable {
		tinsert(&tb, k)
	}
	const rounds = 60
	var stop atomic.Bool
	var wg, readers sync.WaitGroup
	var errs atomic.Int64
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for !stop.Load() {
				for _, k := range stable {
					if n := tb.load(k); n == nil || n.key() != k {
						errs.Add(1)
					}
				}
				for _, k := range churn {
					if n := tb.load(k); n != nil && n.key() != k {
						errs.Add(1)
					}
				}
			}
		}()
	}
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := churn[w*len(churn)/2 : (w+1)*len(churn)/2]
			for range rounds {
				for _, k := range mine {
					tinsert(&tb, k)
				}
				for _, k := range mine {
					tdelete(&tb, k)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range rounds * 20 {
			treplace(&tb, stable[i%len(stable)])
		}
	}()
	for r := range rounds {
		k := "same" + strconv.Itoa(r)
		var got [4]*tnode
		var made atomic.Int64
		var same sync.WaitGroup
		for i := range got {
			same.Add(1)
			go func() {
				defer same.Done()
				n, inserted := tinsert(&tb, k)
				if inserted {
					made.Add(1)
				}
				got[i] = n
			}()
		}
		same.Wait()
		require.EqualValues(t, 1, made.Load(), "key %s made once", k)
		for i := range got {
			require.Same(t, got[0], got[i], "key %s: one node", k)
		}
	}
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	assert.Zero(t, errs.Load(), "lookups that missed a key held throughout, or found another key's node")
	assert.Equal(t, len(stable)+rounds, tb.size())
	// Each writer fills and empties its half of the shard every round, but
	// while the other holds its half the shard need not shrink: under load
	// the two overlap more, and a loaded run has counted 54 replaced arrays
	// in 60 rounds. A quarter of the rounds still says the shard was
	// replaced over and over under the lookups.
	t.Logf("%d arrays replaced in %d rounds", tb.growths.Load(), rounds)
	assert.Greater(t, tb.growths.Load(), int64(rounds/4), "the shard grew and shrank under the lookups")
}

// TestTableEmptyKeyIsNeverTheTombstone: the tombstone is a node whose key
// is "", and a deleted slot keeps its key's hash; so once the key "" is
// deleted, its slot holds the tombstone under the hash of "". A lookup of ""
// there, or of any key, reports it not held, and an insertion of "" again
// gets a node of its own.
func TestTableEmptyKeyIsNeverTheTombstone(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	n, _ := tinsert(&tb, "")
	require.Same(t, n, tb.load(""))
	require.True(t, tdelete(&tb, ""))
	assert.Nil(t, tb.load(""), "a deleted empty key is not held")
	assert.Nil(t, treplace(&tb, ""), "nor found to replace")
	fresh, inserted := tinsert(&tb, "")
	assert.True(t, inserted)
	assert.NotSame(t, tb.tomb, fresh)
	assert.Same(t, fresh, tb.load(""))
}

// TestTableInsertionThatGrowsPassesACollidingNode: an insertion that
// replaces its shard's array finds its slot in the new one by its own key,
// passing, as in the old array, the node of another key under its hash (a
// collision of the two keys' hashes; the other key here is "", the key of
// no node but the tombstone's until it is inserted): both keys stay held,
// each with its node.
func TestTableInsertionThatGrowsPassesACollidingNode(t *testing.T) {
	var tb table[int64]
	tb.init(0) // arrays of minSlots: the 7th slot used replaces one
	keys := shardKeys(&tb, 5, minSlots*3/4)
	key := keys[len(keys)-1]
	for _, k := range keys[:len(keys)-1] {
		tinsert(&tb, k)
	}
	h := tb.hash(key)
	s := tb.lock(h)
	_, free := tb.locked(s, h, key)
	other := newNode[int64]("")
	tb.insert(s, h, other, free) // under key's hash
	s.mu.Unlock()
	require.Zero(t, tb.growths.Load())
	n, inserted := tinsert(&tb, key)
	require.True(t, inserted)
	require.EqualValues(t, 1, tb.growths.Load(), "the insertion replaced the array")
	assert.Same(t, n, tb.load(key))
	assert.Same(t, other, tb.probe(tb.array(h).Load(), h, ""), "the colliding node, under key's hash")
	assert.Equal(t, minSlots*3/4+1, tb.size())
}

// TestTableSlotReadMidReuseIsRejectedByItsKey: a lookup of key that loads a
// slot's node, another key's, and then its hash just after that node was
// deleted and key's insertion reused the slot (storing key's hash first)
// reads key's hash with the other key's node; it must not report that node
// as key's. The array below holds that pair of readings.
func TestTableSlotReadMidReuseIsRejectedByItsKey(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	key := shardKeys(&tb, 7, 1)[0]
	other := probeKeys(&tb, 7, key, 1)[0] // in the slot key's probe starts on
	n, _ := tinsert(&tb, other)
	h := tb.hash(key)
	a := *tb.array(h).Load()
	for i := range a {
		if a[i].node.Load() == n {
			a[i].hash.Store(h) // the hash key's insertion stores before its node
		}
	}
	assert.Nil(t, tb.probe(&a, h, key), "another key's node under key's hash is not key's")
}

// TestTableBytesIsTheTableOfACappedMapFlooded: with every shard's array
// allocated by a flood of keys, each soon idle and evicted for the next, a
// capped map's table, its shards' writers' states and their arrays, takes
// TableBytes of its cap: no more, as no array grows past the size it was
// given up front, not even to shed the tombstones the evictions leave (at
// 12,000 and 2^20, where a shard's keys often pass half its slots), and no
// less. A shard that draws more keys than its array is sized for (fit, some
// standard deviations above its share: see floorSlots) may grow; the test
// follows each shard's keys after every insertion, and allows those only.
//
// Under the race detector the cap of MaxPresize is left out: its flood, four
// million keys on one goroutine, which the detector has nothing to check
// in, took that run past ten minutes on a loaded machine, most of its
// package's time limit; the runs without the detector flood it.
func TestTableBytesIsTheTableOfACappedMapFlooded(t *testing.T) {
	for _, c := range []struct{ maxKeys, want int }{
		{1, 128 << 10}, {1024, 128 << 10}, {2000, 256 << 10}, {12_000, 512 << 10},
		{100_000, 4 << 20}, {MaxPresize, 32 << 20},
	} {
		if raceEnabled && c.maxKeys == MaxPresize {
			continue
		}
		idle := func() func(*int64) bool {
			return func(*int64) bool { return true } // every key idle: a new one evicts one
		}
		m := New(nil, idle, hotlimit.Options{MaxKeys: c.maxKeys})
		var most [tableShards]int // the most keys each shard held
		for i := 0; ; i++ {
			allocated := 0
			for j := range m.cells.arrays {
				if m.cells.arrays[j].Load() != nil {
					allocated++
				}
			}
			if allocated == tableShards && i >= 4*c.maxKeys {
				break
			}
			key := "k" + strconv.Itoa(i)
			require.NotNil(t, m.Get(key))
			j := m.cells.hash(key) >> (64 - shardBits)
			most[j] = max(most[j], m.cells.shards[j].Load().held)
		}
		slots, overfull := 0, 0
		for j := range m.cells.arrays {
			require.NotNil(t, m.cells.shards[j].Load(), "cap %d: shard %d written", c.maxKeys, j)
			if most[j] > m.cells.fit {
				overfull++
				continue
			}
			require.Len(t, *m.cells.arrays[j].Load(), m.cells.floor, "cap %d: shard %d's array, of the size given up front", c.maxKeys, j)
			slots += m.cells.floor
		}
		assert.Equal(t, c.want, (slots+overfull*m.cells.floor)*int(unsafe.Sizeof(slot[int64]{})), "cap %d: its arrays", c.maxKeys)
		assert.Equal(t, tableAllocated(c.maxKeys), TableBytes(c.maxKeys), "cap %d: the flooded table", c.maxKeys)
		assert.Less(t, overfull, 4, "cap %d: shards past the keys their array is sized for", c.maxKeys)
	}
	assert.Equal(t, TableBytes(MaxPresize), TableBytes(math.MaxInt), "sized for MaxPresize keys")
}

// tableAllocated returns the bytes a table sized for a cap of maxKeys takes
// once each shard has been written: the table's own, and what the first
// writes allocated (each shard's writers' state, its array and the slice
// its array pointer points to), as the allocator counts them, size classes
// and headers included. It takes the least of a few measurements, as a
// goroutine another test left behind may allocate during one, with the
// collector off, whose cycles allocate (16 to 112 bytes in about one
// measurement in a hundred, with it on).
func tableAllocated(maxKeys int) int {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	least := ^uint64(0)
	for range 3 {
		tb := new(table[int64])
		tb.init(min(maxKeys, MaxPresize))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range uint64(tableShards) {
			tb.lock(i << (64 - shardBits)).mu.Unlock()
		}
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
		runtime.KeepAlive(tb)
	}
	return int(unsafe.Sizeof(table[int64]{})) + int(least)
}

// TestTableBytesIsWhatTheTableAllocates: TableBytes counts a table's
// allocations as the allocator takes them, on 32- and 64-bit platforms
// alike: a shard's writers' state and the slice its array pointer points to
// each take a size class, and an array of 64 to 1024 slots an 8-byte header
// besides, which puts it in a size class up to a fifth larger.
func TestTableBytesIsWhatTheTableAllocates(t *testing.T) {
	for _, maxKeys := range []int{1, 1024, 2000, 3000, 12_000, 30_000, 100_000, 300_000, MaxPresize} {
		assert.Equal(t, tableAllocated(maxKeys), TableBytes(maxKeys), "cap %d", maxKeys)
	}
}

// TestTableAllocatedIsWhatTheAllocatorTakes: allocated(size) is what the
// allocator takes for an object of size bytes that holds pointers, measured
// on either side of every boundary allocated draws: each size class (and 8
// bytes below it, which a malloc header fills), the size past which an
// object has a header, the largest small object with its header, and the
// page multiples past it. TableBytes asks it only for a few of those sizes.
func TestTableAllocatedIsWhatTheAllocatorTakes(t *testing.T) {
	word := int(unsafe.Sizeof(uintptr(0)))
	sizes := map[int]bool{}
	around := func(size int) {
		for _, s := range []int{size - word, size, size + word} {
			if s > 0 {
				sizes[s/word*word] = true // a whole number of pointers
			}
		}
	}
	for _, c := range sizeClasses {
		around(int(c))
		around(int(c) - 8)
	}
	for _, s := range []int{word * word * 8, 32<<10 - 8, 32 << 10, 40 << 10, 48 << 10} {
		around(s)
	}
	for size := range sizes {
		assert.Equal(t, pointersAllocated(size/word), allocated(uintptr(size)), "%d bytes of pointers", size)
	}
}

// pointersAllocated returns the bytes the allocator takes for an array of n
// pointers: the least of a few measurements, as a goroutine another test
// left behind may allocate during one.
func pointersAllocated(n int) int {
	const k = 16
	keep := make([][]unsafe.Pointer, k)
	least := ^uint64(0)
	for range 3 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = make([]unsafe.Pointer, n)
		}
		runtime.ReadMemStats(&after)
		least = min(least, (after.TotalAlloc-before.TotalAlloc)/k)
	}
	runtime.KeepAlive(keep)
	return int(least)
}

// writers returns the writers' state of the shard of the key hashed to h,
// nil before the shard's first write.
func (t *table[C]) writers(h uint64) *shard[C] {
	return t.shards[h>>(64-shardBits)].Load()
}

// TestShardRacedToItsFirstWriteIsOne: two writers of a shard with no
// writers' state yet each allocate one, and the second to put its own in the
// table finds the first's there: it locks the first's lock, the one every
// writer of the shard locks from then on, and drops its own.
func TestShardRacedToItsFirstWriteIsOne(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	h := tb.hash("k")
	var first *shard[int64]
	installing = func() {
		installing = nil
		require.Nil(t, tb.writers(h), "the writer allocated its state before any was in the table")
		first = tb.lock(h) // the other writer, first to put its state there
		first.mu.Unlock()
	}
	defer func() { installing = nil }()
	s := tb.lock(h)
	defer s.mu.Unlock()
	require.NotNil(t, first, "the other writer ran between the allocation and the CAS")
	assert.Same(t, first, s, "the shard locked is the one in the table")
	assert.Same(t, first, tb.writers(h))
	assert.False(t, first.mu.TryLock(), "the table's shard is the one locked")
}
