package keyed

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"sync/atomic"
)

// The table: the map from keys to nodes that Map keeps its cells in.
//
// It is split into tableShards shards, chosen by the top bits of a key's
// hash. Each shard is an open-addressing array of slots, probed linearly
// from the slot the hash's low bits pick; a slot holds the key's full hash
// and an atomic pointer to its node. Writers (an insertion, a deletion, a
// revival's replacement) take their shard's lock; readers never lock. A
// shard allocates its array on its first insertion, and replaces it (grows
// it, shrinks it, or rebuilds it at the same size to shed tombstones) by
// copying only its own slots under its lock: an insertion that needs a
// bigger array pays for the keys of one shard, not of the table, and the
// copy moves hashes and node pointers, never rehashing a key nor reading a
// node. The live keys are counted in striped counters, so that Size reads a
// few words and insertions on different CPUs seldom write the same one.
//
// A slot's node pointer is nil until the slot is first used, then a node,
// then tomb when the node is deleted, and after that perhaps another node
// (an insertion reuses the first tombstone its probe passed); a revival
// replaces a slot's dead node with a fresh one of the same key. A slot
// never becomes nil again in an array: a probe for a key goes on past
// nodes of other keys and tombstones, and a nil ends it.
//
// # Why a lock-free lookup is linearizable
//
// A writer writes only into its shard's current array, under the shard's
// lock; a replacement copies that array's nodes into a new one, publishes
// it (an atomic store), and never writes the old one again. A lookup loads
// its shard's array pointer once and probes that array.
//
//   - A key held throughout a lookup is found. When the lookup loads the
//     array pointer, the key's insertion has written its slot in that array
//     (the insertion's store of the node into the current array is its
//     linearization point, and the array it wrote was current until a later
//     replacement, which copied it). The slot's node pointer stays that
//     key's until the key is deleted, which it is not; the slots before it
//     on its probe were not nil when it was inserted, and never become nil.
//     If the array is replaced during the lookup, the old one keeps the
//     state it had when it was copied, which holds the key. So the probe
//     reaches the key's slot: it may find there the dead node a revival has
//     since replaced (the old array keeps it, or the lookup read the slot
//     before the replacement), which Map's callers handle as they handle a
//     cell tombstoned under them: they call Revive.
//   - A node found is a node its key mapped to during the lookup: the key
//     comparison, not the hash, decides, and a node's key never changes. A
//     node read from an array that has since been replaced, or from a slot
//     since deleted, was in the map when the lookup loaded it. (candidate
//     leaves the comparison to its caller, Found.Cell: a node of the key it
//     returns is the one load would have returned from the same reads.)
//   - A key deleted and inserted again during a lookup may be missed: its
//     new slot may be a tombstone the probe has already passed (the first
//     one on the key's probe) while its old slot, reached later, holds a
//     tombstone. The key was not held between the two writes, so a miss is
//     a state the lookup may report.
//
// The hash stored with a slot is a filter: a slot whose node a concurrent
// insertion has just replaced may be read with the other key's hash, and
// then the key comparison rejects it, or with this key's hash and the other
// key's node, which the key comparison rejects too (after candidate, whose
// caller then looks the key up in full).
//
// Range, Map's pass over every node (SweepMap), loads each shard's array
// once and visits its nodes: a key held throughout is in that array, at one
// slot, and is visited once; a key inserted or deleted during the pass may
// be visited or not.

// tableShards is how many shards a table has: enough that a shard's
// replacement, which copies its slots under its lock on the goroutine of the
// insertion that needs it, copies a small part of a large table (some 8k
// keys of 2M), and that writers of different keys seldom wait for the same
// lock. With 64 shards, whose arrays are four times as large, the longest
// single insertion among 2M new keys with auto-sweep on took 20 to 210 ms
// (median 80) on two loaded cores, against 16 to 40 ms (median 20) with 256,
// where allocating alone, with no table, stalls for 6 to 28 ms. An empty
// table holds a pointer to each shard's array and one to each shard's
// writers' state, 4 KB in all; a shard's state, 32 bytes, is allocated on
// its first write, and its array, with the 24-byte slice the array pointer
// points to, on its first insertion (see TableBytes).
const tableShards = 256

// shardBits is log2(tableShards): a key's shard is its hash's top shardBits.
const shardBits = 8

// installing is a test hook, called before a writer puts the shard it
// allocated in a table's shards. A package variable, not a table's field:
// a table's size decides the allocation class of every limiter.
var installing func()

// minSlots is the smallest array a shard allocates.
const minSlots = 8

// table maps keys to nodes. The zero value is not usable: see init.
type table[C any] struct {
	seed    maphash.Seed
	tomb    *node[C]                               // the node pointer of a deleted slot; never a key's node
	floor   int                                    // the fewest slots a shard's array keeps: see init
	fit     int                                    // the keys a shard's array of floor slots is sized for: see init
	arrays  [tableShards]atomic.Pointer[[]slot[C]] // each shard's current array; nil until its first insertion
	shards  [tableShards]atomic.Pointer[shard[C]]  // each shard's writers' state; nil until its first write
	live    inflight                               // the keys held, striped by shard: see Size
	growths atomic.Int64                           // the arrays replaced, for tests
}

// shard is the writers' side of one part of a table: the lock under which
// they write its array, and their counts. Lookups read only the array, whose
// pointer the table keeps in arrays, apart from the lock and counts that
// writers write; a shard is allocated on the first write of its part of the
// table, so that a table with few keys, or none, does not pay for all 256
// (see tableShards).
type shard[C any] struct {
	mu    sync.Mutex                 // held by writers of the shard's keys
	slots *atomic.Pointer[[]slot[C]] // the shard's entry of the table's arrays
	used  int                        // slots not nil in the current array, tombstones included; under mu
	held  int                        // nodes in the current array; under mu
}

// slot is one entry of a shard's array.
type slot[C any] struct {
	node atomic.Pointer[node[C]] // nil, a node, or tomb
	hash atomic.Uint64           // the hash of node's key, when node has been set
}

// init makes t, a zero table, an empty one whose arrays are sized, as they
// are allocated, for presize keys in all without a replacement.
func (t *table[C]) init(presize int) {
	t.seed, t.tomb = maphash.MakeSeed(), newNode[C]("")
	t.floor, t.fit = floorSlots(presize)
}

// floorSlots returns the fewest slots a shard's array keeps in a table
// sized for presize keys (minSlots when presize ≤ 0), and the keys such an
// array is sized for, below three quarters of its slots (0 when presize ≤ 0).
func floorSlots(presize int) (slots, fit int) {
	if presize <= 0 {
		return minSlots, 0
	}
	// A shard holds about presize/tableShards keys, and more by the spread
	// of the hash: four standard deviations of slack (and 8 keys) keep a
	// shard below its growth threshold, of three quarters of its slots, but
	// for a chance of at most about 2e-5 each time it sheds its tombstones.
	// The array, a power of two, often has room for more: the shard keeps it
	// for as many keys as fill five eighths of it, which leaves an eighth
	// for insertions before the next rebuild (at 2^20 keys: 5,120 a shard,
	// sixteen deviations above the mean, where four are 4,361).
	per := presize/tableShards + 1
	per += 4*isqrt(per) + 8
	slots = max(minSlots, pow2(per*4/3+1))
	return slots, max(per, slots*5/8)
}

// isqrt returns the integer square root of n ≥ 0.
func isqrt(n int) int {
	r := 0
	for b := 1 << (bits.Len(uint(n)) &^ 1); b > 0; b >>= 2 {
		if n >= r+b {
			n -= r + b
			r = r>>1 + b
		} else {
			r >>= 1
		}
	}
	return r
}

// pow2 returns the smallest power of two ≥ n, for n ≥ 1.
func pow2(n int) int {
	return 1 << bits.Len(uint(n-1))
}

// hash returns key's hash: its top shardBits pick the shard, its low bits
// the first slot of the probe.
func (t *table[C]) hash(key string) uint64 {
	return maphash.String(t.seed, key)
}

// array returns the array pointer of the shard of the key hashed to h.
func (t *table[C]) array(h uint64) *atomic.Pointer[[]slot[C]] {
	return &t.arrays[h>>(64-shardBits)]
}

// load returns key's node, or nil when the table does not hold key. It
// never locks.
func (t *table[C]) load(key string) *node[C] {
	h := t.hash(key)
	return t.probe(t.array(h).Load(), h, key)
}

// probe returns the node of key, hashed to h, in the array a (nil: none),
// or nil when a holds no node of key.
func (t *table[C]) probe(a *[]slot[C], h uint64, key string) *node[C] {
	if a == nil {
		return nil
	}
	s := *a
	mask := uint64(len(s) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		n := s[i].node.Load()
		if n == nil {
			return nil
		}
		if s[i].hash.Load() == h && n != t.tomb && n.is(key) {
			return n
		}
	}
}

// candidate returns the node of the first slot on key's probe that holds
// key's hash and a node (nil: none), without reading any node: it is key's
// node, unless another key's of the same hash comes first on the probe, or
// was put in the slot while it was read (see "Why a lock-free lookup is
// linearizable": the hash is a filter). The caller confirms it by its key.
// A nil return is a miss, as load's: the probe met no slot of key's hash.
func (t *table[C]) candidate(key string) *node[C] {
	h := t.hash(key)
	return t.first(t.array(h).Load(), h)
}

// first is candidate's probe of the array a (nil: none) for the hash h.
func (t *table[C]) first(a *[]slot[C], h uint64) *node[C] {
	if a == nil {
		return nil
	}
	s := *a
	mask := uint64(len(s) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		n := s[i].node.Load()
		if n == nil {
			return nil
		}
		if n != t.tomb && s[i].hash.Load() == h {
			return n
		}
	}
}

// find returns the position of key's node in s's array, or -1, and the
// position an insertion of key takes: the first tombstone the probe passed,
// or the nil slot that ended it. The array must not be nil. Call it with
// s.mu held.
func (t *table[C]) find(s *shard[C], h uint64, key string) (at, free int) {
	a := *s.slots.Load()
	mask := uint64(len(a) - 1)
	free = -1
	for i := h & mask; ; i = (i + 1) & mask {
		n := a[i].node.Load()
		if n == nil {
			if free < 0 {
				free = int(i)
			}
			return -1, free
		}
		if n == t.tomb {
			if free < 0 {
				free = int(i)
			}
			continue
		}
		if a[i].hash.Load() == h && n.is(key) {
			return int(i), free
		}
	}
}

// lock locks the shard of the key hashed to h, allocating its writers'
// state if it has none (the shard's first write) and its array if it has
// none, and returns the shard: the caller then finds the key, and inserts,
// replaces or deletes it, and unlocks s.mu.
func (t *table[C]) lock(h uint64) *shard[C] {
	i := h >> (64 - shardBits)
	s := t.shards[i].Load()
	if s == nil {
		// The shard's first writer allocates it. Invariant: a shard, once
		// in shards, is never replaced, so every writer of its keys locks
		// the same lock. Of writers racing to put one there, the CAS lets
		// one through; the others take the winner's, which they load after
		// their CAS failed, and drop their own, which no one has locked.
		s = &shard[C]{slots: &t.arrays[i]}
		if installing != nil {
			installing()
		}
		if !t.shards[i].CompareAndSwap(nil, s) {
			s = t.shards[i].Load()
		}
	}
	s.mu.Lock()
	if s.slots.Load() == nil {
		a := make([]slot[C], t.floor)
		s.slots.Store(&a)
	}
	return s
}

// locked returns key's node in s, the shard lock locked, and its position,
// or nil and the position an insertion takes.
func (t *table[C]) locked(s *shard[C], h uint64, key string) (n *node[C], at int) {
	at, free := t.find(s, h, key)
	if at < 0 {
		return nil, free
	}
	return (*s.slots.Load())[at].node.Load(), at
}

// insert puts n, whose key hashes to h and is not in s, at free, the
// position locked returned, replacing s's array first when the insertion
// would fill more than three quarters of it. The new array holds the keys
// at half its slots or less, or is of the floor's size when the keys, n's
// included, are no more than the floor was sized for: tombstones, which a
// capped map's evictions leave in every shard, are shed without growing the
// array past the size it was given up front (by fit ≤ 3/4 of floor, n then
// fits). Call it with s.mu held.
func (t *table[C]) insert(s *shard[C], h uint64, n *node[C], free int) {
	a := *s.slots.Load()
	reuse := a[free].node.Load() == t.tomb
	if !reuse && (s.used+1)*4 > len(a)*3 {
		size := max(t.floor, pow2(2*(s.held+1)))
		if s.held+1 <= t.fit {
			size = t.floor
		}
		t.replace(s, size)
		_, free = t.find(s, h, n.key())
		a = *s.slots.Load()
		reuse = false
	}
	a[free].hash.Store(h) // before the node: a reader that loads n finds h
	a[free].node.Store(n)
	if !reuse {
		s.used++
	}
	s.held++
	t.live.stripes[t.stripe(h)].n.Add(1)
}

// put replaces the node at position at of s's array by n, of the same key.
// Call it with s.mu held.
func (t *table[C]) put(s *shard[C], at int, n *node[C]) {
	(*s.slots.Load())[at].node.Store(n)
}

// delete deletes the node at position at of s's array, then shrinks the
// array when it holds fewer than an eighth of its slots in nodes. Call it
// with s.mu held.
func (t *table[C]) delete(s *shard[C], h uint64, at int) {
	a := *s.slots.Load()
	a[at].node.Store(t.tomb)
	s.held--
	t.live.stripes[t.stripe(h)].n.Add(-1)
	if len(a) > t.floor && s.held*8 < len(a) {
		t.replace(s, max(t.floor, pow2(2*s.held+1)))
	}
}

// replace copies s's nodes into a new array of size slots, a power of two
// that holds them, and the key an insertion adds, below three quarters of
// its slots (see insert and delete), and publishes it; the old array
// is never written again (see "Why a lock-free lookup is linearizable").
// Call it with s.mu held.
func (t *table[C]) replace(s *shard[C], size int) {
	old := *s.slots.Load()
	a := make([]slot[C], size)
	mask := uint64(size - 1)
	for i := range old {
		n := old[i].node.Load()
		if n == nil || n == t.tomb {
			continue
		}
		h := old[i].hash.Load()
		j := h & mask
		for a[j].node.Load() != nil {
			j = (j + 1) & mask
		}
		a[j].hash.Store(h)
		a[j].node.Store(n)
	}
	s.slots.Store(&a)
	s.used = s.held
	t.growths.Add(1)
}

// stripe returns the live counter of the key hashed to h: one per group of
// shards, so that writers of one shard, which hold its lock, write one.
func (t *table[C]) stripe(h uint64) int {
	return int(h>>(64-shardBits)) % inflightStripes
}

// size returns the number of keys held: the sum of the striped counters,
// read in turn, so off by the insertions and deletions made meanwhile.
func (t *table[C]) size() int {
	return int(t.live.count())
}

// rangeNodes calls f on every node in the table, shard by shard, each
// shard's array loaded once. A key held throughout is visited once; see
// "Why a lock-free lookup is linearizable".
func (t *table[C]) rangeNodes(f func(n *node[C])) {
	for i := range t.arrays {
		a := t.arrays[i].Load()
		if a == nil {
			continue
		}
		for j := range *a {
			n := (*a)[j].node.Load()
			if n == nil || n == t.tomb {
				continue
			}
			f(n)
		}
	}
}
