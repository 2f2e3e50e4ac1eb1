// Package keyed holds the per-key state cells of a limiter in a lock-free map,
// evicts idle ones without losing a concurrent update, sweeps incrementally,
// and can cap the number of keys held.
//
// A limiter keeps one cell per key. Its hot path looks the key up in one of
// two ways. Load is one lock-free map load, inlined into the limiter; on a
// miss the limiter calls Get, which inserts a fresh cell (locking one shard
// of the map's table for the insertion only: see table.go). Find splits the
// lookup around the limiter's clock reading: before it, the node of the
// key's hash, or Get's insertion on a miss; after it, Found.Cell confirms
// the node's key, and on another key's node the limiter calls Get and reads
// the clock again (see Found). Every change to a cell's state is a
// compare-and-swap made by the limiter itself; this package reads a cell's
// state only through the limiter's kill function.
//
// Eviction uses a tombstone. A sweep asks the limiter's kill function to swap
// a reserved "dead" value into an idle cell by CAS; once dead, no CAS of a
// decision can succeed on that cell (each expects the live value it read), so
// an update that raced the sweep retries. A caller that reads the dead value
// calls Revive, which replaces the dead cell under its key with a fresh one
// (or returns the live cell another caller already put there) and carries on.
// The sweeper then deletes the key only if it still maps to the dead cell. No
// update is lost, and no caller waits for another. A limiter may tombstone a
// cell itself, by the CAS of a write that returns the key to a fresh key's
// state (a refund), and then calls Drop, which deletes the key in the same
// way.
//
// The map never keeps a key string it is given: it stores a copy, made with
// the node that holds the key's cell, on the insertion paths only (a miss, a
// revival), so the hot path copies nothing. A key of up to 47 bytes is
// copied into the node's own allocation, a longer one into an allocation of
// its own (see newNode). A caller may therefore pass a key that aliases a buffer it reuses
// once the call returns, as package service does to build (user, api) keys
// without allocating. The map and the sweep list share that one copy.
//
// # The sweep list
//
// Besides the map, every cell sits in a singly linked list of nodes, so that
// a sweep can stop anywhere and resume there (a pass over the table cannot).
// A node holds the cell itself, its key and its link. Nodes are pushed at the
// front, so next always leads to an older node, and every path along next
// ends at the oldest node, whose next is nil:
//
//	head (a sentinel) → newest → … → oldest → nil
//
// Every write to a next pointer is a compare-and-swap, of one of two kinds:
//
//   - A push (after an insertion published its node in the map) swaps
//     head.next from the node it read to the new node, whose next is that
//     node. It skips nothing.
//   - An unlink, by a walker, swaps p.next from n to the value it read in
//     n.next, where n is dead: it skips n only. If p.next changed since it
//     was read (a push, another walker's unlink), the CAS fails and n stays,
//     to be unlinked on a later visit.
//
// A dead cell never lives again (a Revive puts a new node in its place), so
// no write ever skips a live node: every node in the map, once pushed, stays
// reachable from head. A concurrent unlink of n's successor m may leave m
// linked behind p after p's unlink of n (p.next = m, which is dead); such a
// node, like one whose unlink failed, is unlinked on a later visit. An
// unlinked node keeps its next, so a walker standing on it still walks
// forward into the list.
//
// A node leaves the map only when it is dead: deleted by a walker, by Drop or
// by SweepMap, each of which deletes it only if its key still maps to it, or
// replaced by Revive. A walker visiting a node calls kill, which reports the
// cell dead, newly or already, and then deletes the node's key if it still
// maps to it and unlinks the node. So the list holds the nodes in the map,
// plus dead nodes awaiting a visit (see "Dead nodes left listed"), until a
// walk meets them, and the keys held never exceed the nodes listed by more
// than the insertions in flight.
//
// # Walks
//
// The bounded walks (auto-sweep, key cap, Drop's) share one cursor, at, the
// node after which the next walk starts. A walker claims its nodes before it
// visits them: it reads a chunk of nodes forward from at and moves at onto the
// last of them by CAS, retrying from the new value when another walker moved it
// first (one always succeeds: lock-free). Claims do not overlap within one
// pass, so concurrent walkers share the work rather than repeat it, and none
// waits for another; the one exception is harmless: a walker that unlinks every
// node of its claim moves the cursor back onto the node it claimed from
// (below), and a walker that read its chunk from there before then claims it
// again. A walker visits every node it claimed, the last one included, where it
// leaves the cursor (it walks from the first node its claim read, not from the
// cursor's node again, whose next a push may have changed since; and a key
// cap's walk, which stops once there is room, leaves the rest of its claim to
// the next pass, the keys held having changed): while the list does not
// change, the claims of every pass stop on the same nodes, so a node the cursor
// stood on unvisited would stay unvisited pass after pass, and an idle key
// there would never be evicted. As the next walker's unlink of the node after
// the cursor is a CAS on the cursor node's next, the cursor should stand on a
// linked node: a walker that unlinks the node the cursor stands on (the last it
// claimed, or as a Sweep or a walker a pass behind) moves the cursor back onto
// the node whose next it has just swapped, the node before it. At the end of
// the list the cursor goes back to head. Sweep walks the whole list with a
// cursor of its own. Two walkers meeting the same node do no harm: kill, the
// deletion and the unlink are each conditional on what they expect, and at
// worst a dead node stays listed until the next pass (as when a walker unlinks
// the last node it claimed after the next walker claimed from it: that walker's
// unlinks then act on an unlinked node).
//
// # Incremental auto-sweep
//
// With an auto-sweep threshold, each insertion that finds the map at the
// threshold or above owes StepVisits visits, before it lists its own key;
// the insertion whose debt completes a chunk of SweepChunk visits pays it,
// with a walk of SweepChunk visits. A pass over L nodes takes L/StepVisits
// insertions, L/3: so the keys held stay below 1.6 times the keys that are
// not idle when the pass reaches them, plus the threshold and a chunk.
//
// # Dead nodes left listed
//
// A walker that kills a cell deletes its key and unlinks its node in one
// visit, but a cell tombstoned by its limiter (a refund that returns a key to
// a fresh key's state) leaves its node listed, dead, with no visit due: Drop
// deletes the key, or a Revive puts a new node in the map in its place, and
// either way the map no longer counts it. Were walks paid only by insertions
// into a map at the threshold, or at the cap, a limiter whose keys are taken
// and given back would list a node per refund, without end, while Len read
// a handful. So each such tombstone owes the walks StepVisits visits,
// charged by Drop (the limiter calls it once per tombstone) into the
// auto-sweep's debt. In a map with neither an auto-sweep nor a key cap,
// which evicts only on Sweep, those walks judge a node by the map alone: a
// listed node its key no longer maps to is dead (nodes are listed once in
// the map, leave it only dead, and never come back), and is unlinked; every
// other node stays, idle or not. So even a limiter never swept, on a fixed
// set of keys, does not grow by a node per refund. A pass
// over L nodes is then paid by L/3 tombstones at most, and a dead node is
// unlinked by the pass after the one under way when it was left, so the dead
// nodes listed stay below about twice the keys held, plus a chunk.
//
// SweepMap, too, deletes the keys of the cells it kills and unlinks nothing:
// it runs after Sweep (in SweepAll), so the nodes it leaves dead are those
// listed after Sweep passed, or listed later by their insertion or revival,
// under way during the call. They owe no visits: the next Sweep, or a walk,
// unlinks them.
//
// # The key cap
//
// With a cap of n keys, count reserves a key as it is inserted, under the lock
// of its shard, and is released after it is deleted, so Len ≤ count, and count
// ≤ n but for the revivals below. Reserving under that lock makes the check and
// the insertion one step for callers of one key: a caller that misses a key
// another caller is inserting finds it held once it gets the lock, and never
// finds the room taken by that insertion with the key not yet held. An
// insertion that finds count at n walks up to MaxVisits nodes, evicting idle
// ones, and stops once count is below n: at the eviction that brings it there
// (the first, unless revivals put count over n, or concurrent insertions take
// the room), or before its next visit when another deletion did; if it
// then finds no room and the key not held, Get returns nil and the limiter
// denies the new key. A caller that revives a key evicted under it (it held the
// cell before the kill) re-inserts it without the check, and walks to evict an
// idle key when that puts the map over the cap: before the re-insertion when it
// finds the cap reached and the key gone, and after it (before listing its
// fresh cell, which the walk therefore cannot evict) whenever the re-insertion
// put the map over the cap all the same (other keys took the room since the
// check, or since the walk before it, or the key was deleted since the check),
// unless the walk before it went round the whole list and evicted no key. A
// walk visits at most MaxVisits nodes, from the cursor, where the walk before
// it stopped, so the second walk goes on past the nodes the first one found
// busy. So the cap can be exceeded only by such callers, each by one key,
// while their walks find no idle key (no key is idle, or those that are lie
// past the nodes the walks visit, or the walk that looks for one is under
// way): the next insertion's walk, from where theirs stopped, evicts idle
// keys until count is below n again.
package keyed

import (
	"encoding/binary"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/hotlimit/hotlimit"
)

const (
	// StepVisits is how many node visits an insertion owes the auto-sweep,
	// once the map is at its threshold or above.
	StepVisits = 3
	// SweepChunk is how many nodes an auto-sweep step claims and visits: it
	// is paid by the insertion whose debt completes a chunk.
	SweepChunk = 32
	// MaxPresize is the most keys a capped map's table is sized for up
	// front: 32 MB of table.
	MaxPresize = 1 << 20
	// MaxVisits bounds the nodes a key-cap eviction visits.
	MaxVisits = 64
	// capChunk is how many nodes a key-cap eviction claims at a time.
	capChunk = 8
)

// TableBytes returns the bytes of the table of a map with a key cap of
// maxKeys (> 0) once every shard has allocated its array, as a flood of keys
// makes them do: the table is sized for min(maxKeys, MaxPresize) keys up
// front, and holds that many without growing (but for a shard that draws
// several standard deviations more than its share: see floorSlots). The
// table and its 256 shards' writers' states and array headers take about
// 19 KB once every shard has a key, and their arrays a power of two of
// 16-byte slots each, with slack for the spread of the keys among them, so
// that a small cap costs more than 32 bytes a key: 32 MB for a cap of
// MaxPresize or more, 4.5 MB for 100,000, 147 KB for 1024 or less. Each
// allocation is counted as the allocator takes it (see allocated). The keys'
// nodes are not counted, nor, with a cap above MaxPresize, the growth of the
// table past MaxPresize keys.
func TableBytes(maxKeys int) int {
	slots, _ := floorSlots(min(max(maxKeys, 1), MaxPresize))
	perShard := allocated(unsafe.Sizeof(shard[struct{}]{})) + // its writers' state
		allocated(unsafe.Sizeof([]slot[struct{}]{})) + // the slice its array pointer points to
		allocated(uintptr(slots)*unsafe.Sizeof(slot[struct{}]{})) // its array
	return int(unsafe.Sizeof(table[struct{}]{})) + tableShards*perShard
}

// sizeClasses are the sizes of the Go allocator's classes of small objects
// (runtime/sizeclasses.go), up to maxSmallSize.
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

// allocated returns the bytes the Go allocator takes for an object of size
// bytes (> 0) that holds pointers, as every allocation of a table does: a
// small one takes the smallest size class that holds it and, when it is
// larger than 512 bytes (128 on a 32-bit platform: a word of pointer bits
// per word), an 8-byte header that tells the collector where its pointers
// are (so an array of 1024 slots, 16 KB, takes 18 KB); a larger one takes
// whole 8 KB pages.
func allocated(size uintptr) int {
	const maxSmallSize, header, page = 32 << 10, 8, 8 << 10
	word := unsafe.Sizeof(uintptr(0))
	if size > word*word*8 { // past gc.MinSizeForMallocHeader
		if size > maxSmallSize-header {
			return int((size + page - 1) &^ (page - 1))
		}
		size += header
	}
	i, _ := slices.BinarySearch(sizeClasses[:], uint16(size)) // size ≤ maxSmallSize, the last class
	return int(sizeClasses[i])
}

// node is a cell and its link in the sweep list, allocated with its key
// after it (see newNode). Get returns &n.cell; node is the map's value.
type node[C any] struct {
	cell C
	next atomic.Pointer[node[C]] // see "The sweep list"
}

// Fails to compile unless cell is node's first field, at offset 0, as Load
// needs.
const _ uintptr = -unsafe.Offsetof(node[struct{}]{}.cell)

// Map maps keys to cells. The zero value is not usable; call New.
type Map[C any] struct {
	cells   table[C]
	init    func(*C)                // makes a zeroed cell fresh; nil when zero is fresh
	judge   func() func(c *C) bool  // a kill function for the current time
	gone    func(c *C) bool         // reports a listed cell out of the map: see Drop
	head    node[C]                 // the sentinel; only head.next is used
	listing inflight                // insertions and revivals between publishing a node and listing it: see SweepAll
	at      atomic.Pointer[node[C]] // the bounded walks' cursor: see "Walks"
	count   atomic.Int64            // keys held or reserved, when maxKeys > 0
	debt    atomic.Int64            // auto-sweep visits owed, in all
	walked  func(visits int)        // test hook: after each bounded walk
	hook    func(step string)       // test hook: at the steps named where it is called

	autoMin int // auto-sweep threshold; 0: off
	maxKeys int // the key cap; 0: none
}

// New returns an empty map. A miss inserts a zeroed cell passed to init (nil
// when the zero value is a fresh cell). judge returns the limiter's kill
// function at the current time: it must tombstone a cell by CAS when its
// state equals a fresh cell's, report whether the cell is dead (killed now or
// before), and never call into the map. New reads o.AutoSweep, the
// auto-sweep threshold, and o.MaxKeys, the key cap; either <= 0 turns it off.
func New[C any](init func(*C), judge func() func(*C) bool, o hotlimit.Options) *Map[C] {
	m := &Map[C]{
		init:    init,
		judge:   judge,
		autoMin: max(o.AutoSweep, 0),
		maxKeys: max(o.MaxKeys, 0),
	}
	presize := 0
	if m.maxKeys > 0 {
		// Sized for the cap, which a flood reaches anyway: no shard's
		// array grows, so no insertion pays for copying one (a shard copies
		// its array on the goroutine whose insertion needs it bigger). A
		// cap above MaxPresize is sized for MaxPresize keys, and grows past
		// it as keys come: sizing for a cap of, say, math.MaxInt would end
		// the process before the first key.
		presize = min(m.maxKeys, MaxPresize)
	}
	m.cells.init(presize)
	m.at.Store(&m.head)
	m.gone = func(c *C) bool {
		// A listed node out of the map is dead: nodes are listed only once
		// published in the map, leave it only dead, and never come back.
		n := (*node[C])(unsafe.Pointer(c)) // cell is node's first field
		return m.cells.load(n.key()) != n
	}
	return m
}

// Get returns key's cell, inserting a fresh one on a miss. With a key cap, it
// returns nil when key is not held, the cap is reached and no idle key was
// found to evict. The map keeps a copy of key, never key itself: see the
// package documentation.
func (m *Map[C]) Get(key string) *C {
	if n := m.cells.load(key); n != nil {
		return &n.cell
	}
	return m.insert(key)
}

// Load returns key's cell if the map holds it, else nil; it never inserts.
// It is a hot path's map load, small enough that the compiler inlines it
// (with its generic wrapper) into a limiter's admission, which Get is not:
// a limiter that loads the cell's word right after the lookup calls Load,
// and Get only when Load returns nil; one that reads its clock in between
// calls Find (see Found).
func (m *Map[C]) Load(key string) *C {
	n := m.cells.load(key)
	// cell is node's first field, so a node's address is its cell's, and
	// nil (no node) converts to nil. Spelled &n.cell, the nil check it
	// needs would put Load over the inliner's budget.
	return (*C)(unsafe.Pointer(n))
}

// Found is a lookup of a limiter's hot path split in two around its clock
// reading: Find locates key's node by the key's hash alone, reading the
// table's slots but not the node, and Cell confirms the node's key, after
// the clock, next to the limiter's first load of the cell's word. On a hot
// key, other cores' CASes keep taking the cell's cache line, which holds the
// node's key too: a lookup that compared the key before a clock reading
// fetched the line for the key, lost it during the reading, and fetched it
// again for the word. The node is still read from the map before the clock
// reading, as the limiters' arguments need (a caller of a cell read the
// clock after the map gave it the cell), and a node's key never changes, so
// confirming it later confirms the lookup: a cell Cell returns is the one
// Load would have returned from the same reads of the table, live or dead
// (deleted or replaced by a revival since, which the caller handles as any
// tombstone, by Revive). Find stops at the first node of key's hash, where
// Load goes on past another key's; so Cell returns nil on such a node, one
// of a key whose hash is key's (a 64-bit collision), or, rarely, one read
// from a slot that another insertion was reusing (see table.go, "the hash is
// a filter"). The caller then calls Get, which looks key up in full, and
// reads the clock again after it.
type Found[C any] struct {
	n *node[C] // the node found or inserted; nil: the key cap turned key away
}

// Find returns the node of key's hash, or, on a miss, inserts key as Get
// does. Call Cell after the clock reading. It is small enough to inline, as
// Load is.
func (m *Map[C]) Find(key string) Found[C] {
	return Found[C]{m.find(key)}
}

// find is Find's lookup: the node of key's hash, or Get's insertion on a
// miss (nil: the key cap had no room).
func (m *Map[C]) find(key string) *node[C] {
	if n := m.cells.candidate(key); n != nil {
		return n
	}
	return (*node[C])(unsafe.Pointer(m.insert(key))) // cell is node's first field
}

// Full reports that Find missed key and the key cap had no room for it: Get
// would have returned nil.
func (f Found[C]) Full() bool { return f.n == nil }

// Cell returns key's cell if the node Find found is key's; nil when it is
// another key's node (see Found), or Full. On nil, call Get, which looks key
// up in full, and read the clock again after it.
func (f Found[C]) Cell(key string) *C {
	if f.n == nil || !f.n.is(key) {
		return nil
	}
	return &f.n.cell
}

// insert is Get on a miss.
func (m *Map[C]) insert(key string) *C {
	if m.hook != nil {
		m.hook("miss")
	}
	stripe := m.listing.enter() // before the node can be in the map: see SweepAll
	n, inserted := m.publish(key)
	if n == nil && m.maxKeys > 0 {
		// No room: evict idle keys to make some (outside the shard lock
		// publish takes: a walk deletes keys, which locks their shards),
		// and try once more.
		m.listing.exit(stripe) // no node published: the walk may be long
		m.walk(MaxVisits, capChunk, m.judge(), int64(m.maxKeys))
		stripe = m.listing.enter()
		n, inserted = m.publish(key)
	}
	if n == nil {
		m.listing.exit(stripe)
		return nil
	}
	if !inserted {
		m.listing.exit(stripe)
		return &n.cell
	}
	// Deferred, so that the node is listed, and counted out of listing,
	// also when the step below panics (the limiter's clock, or its kill
	// function): see list.
	defer m.list(n, stripe)
	if m.autoMin > 0 && m.cells.size() > m.autoMin {
		// The map was at the threshold or above before this insertion.
		// Before the push: this caller's fresh cell, not yet listed, is
		// never its own victim.
		m.step()
	}
	return &n.cell
}

// list ends an insertion or a revival counted in listing: it lists n, the
// node the caller published in the map (nil when it published none), and
// then takes the caller's one off listing, from stripe, the one it added it
// to (see SweepAll). Callers defer it across the walk they may make between
// publishing and listing, which calls the limiter's judge and kill function:
// were a panic there to skip it, the node would stay in the map unlisted,
// never evicted by the walks, and its stripe would stay above zero, so that
// every later SweepAll passed over the whole map.
func (m *Map[C]) list(n *node[C], stripe int) {
	if n != nil {
		if m.hook != nil {
			m.hook("push")
		}
		m.push(n)
	}
	m.listing.exit(stripe) // after the push: see SweepAll
}

// publish returns key's node, putting a fresh one in the map if key is not
// held, and reports whether it did; it returns nil when key is not held and
// the key cap has no room. The reservation is made under the lock of key's
// shard, with the insertion, so that a caller that misses key while another
// inserts it either finds it held or makes the insertion itself: the key cap
// never denies a key whose first insertion has taken the room and is not yet
// in the map.
func (m *Map[C]) publish(key string) (n *node[C], inserted bool) {
	h := m.cells.hash(key)
	s := m.cells.lock(h)
	defer s.mu.Unlock() // also when init panics
	n, free := m.cells.locked(s, h, key)
	if n != nil {
		return n, false
	}
	if m.maxKeys > 0 && !m.tryReserve() {
		return nil, false // no room
	}
	n = m.newNode(key)
	m.cells.insert(s, h, n, free)
	return n, true
}

// A node's key is stored after it, in the node's allocation: a header byte,
// then either the key's bytes (an inline key: the header is their count) or,
// for a key longer than maxInline, the key's length and a pointer to a copy
// of it (a long key: the header is longKey). So a node has no string header
// of its own: a one-word cell's node for a key of up to 15 bytes is one
// 32-byte allocation, where a cell, a string header and a link took 32
// before the key. newNode allocates every node the map holds, and the
// table's tombstone, in one of these forms; key and is read the header
// byte through header[C], no larger than any form, and an inline key
// through inlineKey[C, [15]byte], no larger than any inline form.
const (
	maxInline = 47   // the longest key stored inline
	longKey   = 0xff // the header of a long key
)

// inlineKey is a node allocated with its key's length, of up to len(B)
// bytes, and its bytes: a lookup that loads the node finds the key on its
// line, or the next one.
type inlineKey[C any, B [15]byte | [31]byte | [47]byte] struct {
	n    node[C]
	size uint8 // ≤ len(B), never longKey
	b    B
}

// header is the part of a node's allocation that every form holds: the
// node and its header byte. It is what a node is read as before its form is
// known: inlineKey[C, [15]byte] may be larger than outlineKey[C] (where a
// pointer takes 4 bytes and node[C] is 4 bytes past a multiple of 8, as with
// an int64 cell on 386), so reading a long key's node as one would reach past
// its allocation.
type header[C any] struct {
	n    node[C]
	head uint8 // an inline key's length, or longKey
}

// outlineKey is a node allocated with the length of its key, longer than
// maxInline, and a pointer to the bytes of a copy of it.
type outlineKey[C any] struct {
	n    node[C]
	head [8]byte // longKey, then the key's length in 7 bytes, little-endian
	b    *byte
}

// newNode returns a node, with a zero cell, for a copy of key: the only copy
// of key the map makes (see the package documentation). A key of up to
// maxInline bytes is copied into the node's allocation, after the node, and
// a longer one into an allocation of its own; nothing writes those bytes
// again.
func newNode[C any](key string) *node[C] {
	switch {
	case len(key) <= 15:
		x := new(inlineKey[C, [15]byte])
		x.size = uint8(len(key))
		copy(x.b[:], key)
		return &x.n
	case len(key) <= 31:
		x := new(inlineKey[C, [31]byte])
		x.size = uint8(len(key))
		copy(x.b[:], key)
		return &x.n
	case len(key) <= maxInline:
		x := new(inlineKey[C, [47]byte])
		x.size = uint8(len(key))
		copy(x.b[:], key)
		return &x.n
	}
	x := new(outlineKey[C])
	binary.LittleEndian.PutUint64(x.head[:], uint64(len(key))<<8|longKey)
	x.b = unsafe.StringData(strings.Clone(key))
	return &x.n
}

// key returns n's key, which n's allocation holds (see newNode).
func (n *node[C]) key() string {
	if (*header[C])(unsafe.Pointer(n)).head != longKey {
		x := (*inlineKey[C, [15]byte])(unsafe.Pointer(n))
		return unsafe.String(&x.b[0], x.size)
	}
	y := (*outlineKey[C])(unsafe.Pointer(n))
	return unsafe.String(y.b, binary.LittleEndian.Uint64(y.head[:])>>8)
}

// is reports whether n's key is key. It is key() == key, with the length
// compared before anything else is read; an inline key's bytes are read
// right after the header byte, where every inline form holds them, through
// the header view alone, which keeps is within the inliner's budget.
func (n *node[C]) is(key string) bool {
	h := (*header[C])(unsafe.Pointer(n))
	if len(key) <= maxInline { // only an inline key can be key
		return int(h.head) == len(key) && unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(&h.head), 1)), len(key)) == key
	}
	return h.head == longKey && n.key() == key
}

// newNode returns a fresh node for a copy of key (see the package-level
// newNode), its cell made fresh by m.init, not yet listed.
func (m *Map[C]) newNode(key string) *node[C] {
	n := newNode[C](key)
	if m.init != nil {
		m.init(&n.cell)
	}
	return n
}

// push lists n, which an insertion has just published in the map.
func (m *Map[C]) push(n *node[C]) {
	// Invariant: every listed node stays reachable from head, and next leads
	// to older nodes. n.next is set to the node head.next held when the CAS
	// swaps it for n, so n skips nothing; a concurrent push or unlink changed
	// head.next, failing the CAS, and the loop reads it again.
	for {
		first := m.head.next.Load()
		n.next.Store(first)
		if m.head.next.CompareAndSwap(first, n) {
			return
		}
	}
}

// step adds an insertion's (or a Drop's) StepVisits to the auto-sweep's
// debt, and when the debt completes a chunk, pays it: one walk of SweepChunk
// visits. In a map with neither an auto-sweep nor a key cap, where only Drop
// steps, the walk evicts nothing: it unlinks the dead nodes out of the map,
// and leaves every key held until a Sweep.
func (m *Map[C]) step() {
	// Each chunk of debt is paid once, by the insertion whose add crosses
	// its end: the adds are atomic, so exactly one sees each crossing.
	if d := m.debt.Add(StepVisits); (d-StepVisits)/SweepChunk != d/SweepChunk {
		kill := m.gone
		if m.autoMin > 0 || m.maxKeys > 0 {
			kill = m.judge()
		}
		m.walk(SweepChunk, SweepChunk, kill, 0)
	}
}

// tryReserve takes one key of the cap if count is below it.
func (m *Map[C]) tryReserve() bool {
	// Invariant: count ≤ maxKeys after every reservation, as the CAS adds
	// one only to a value below the cap that no one changed since it was
	// read; a concurrent reservation or release fails it, and the loop reads
	// the new value.
	for {
		c := m.count.Load()
		if c >= int64(m.maxKeys) {
			return false
		}
		if m.count.CompareAndSwap(c, c+1) {
			return true
		}
	}
}

// walk visits up to budget nodes from the shared cursor, claiming chunk
// nodes at a time, going round the list at most once, and when below is
// positive (a key cap's walk) stops once count is below it, which it checks
// before each visit: with below = maxKeys, once the map has room for a key.
// Stopping at the first eviction instead would leave a map over the cap (by
// revivals) full after it, and the new key denied, while idle keys were there
// to evict; checking only after its own evictions would evict a key more
// than the cap needs when another deletion made the room since the walk
// began (a Sweep, another walker). It
// returns how many keys it deleted, and whether it went round the whole
// list: it reached the end of the list twice, or, past the end once, met
// again the node it started on (a list shorter than budget, walked from
// near its front).
func (m *Map[C]) walk(budget, chunk int, kill func(*C) bool, below int64) (deleted int, round bool) {
	visits, wrapped, room := 0, false, false
	var origin *node[C] // the first node visited, before the walk wrapped
	for visits < budget {
		if room = below > 0 && m.count.Load() < below; room {
			break
		}
		from, start, claimed, wraps := m.claim(min(chunk, budget-visits))
		if m.hook != nil {
			m.hook("claimed")
		}
		// The walk starts on the first node the claim read, not on
		// from.next read again: a push may have put a new node there since
		// (when from is head), and counting it would leave the last node
		// claimed, the cursor's, unvisited in this pass.
		prev, n := from, start
		for i := 0; i < claimed && n != nil && visits < budget; i++ {
			// Room made by this walk's last eviction, or by another's since
			// (a Sweep, a walker, a deletion): evict no more. The rest of
			// the claim waits for the next pass.
			if room = below > 0 && m.count.Load() < below; room {
				break
			}
			if visits == 0 && !wrapped {
				origin = n
			} else if n == origin && wrapped {
				round = true // the rest of the budget visits nodes again
			}
			visits++
			next := n.next.Load()
			kept, gone := m.visit(prev, n, next, kill)
			if kept {
				prev = n
			}
			if gone {
				deleted++
			}
			n = next
		}
		if room {
			break
		}
		if wraps {
			if wrapped {
				round = true
				break // round once
			}
			wrapped = true
		}
	}
	if m.walked != nil {
		m.walked(visits)
	}
	return deleted, round
}

// claim hands this walker up to chunk nodes after the shared cursor to visit:
// it returns the node the cursor stood on, from, the first node after it it
// read, and how many nodes from that one on are this walker's; wraps reports
// that the claim reached the end of the list and moved the cursor back to
// head.
func (m *Map[C]) claim(chunk int) (from, first *node[C], claimed int, wraps bool) {
	// Invariant: each pass of the cursor hands every node it meets to one
	// walker. A walker reads chunk nodes forward from the cursor, then moves
	// the cursor from the node it read to the last of them by CAS: it claims
	// them only if the cursor stands where it read it; a concurrent claim
	// that moved it fails this CAS, and the loop claims from the new
	// position. (A cursor moved on and back, by a walker that unlinked its
	// whole claim, lets the CAS succeed on a stale chunk: the two claims
	// overlap, which costs visits, never a node.) It
	// visits them all, the last included, on which it leaves the cursor (if
	// it unlinks that node, visit moves the cursor back onto the node before
	// it, so that the next walker's unlinks act on the list). At the end of
	// the list it moves the cursor to head. Nodes read may be unlinked
	// meanwhile (a Sweep, a walker a pass behind); next still leads forward
	// from them (see "The sweep list"), and at worst a dead node stays listed
	// until the next pass.
	for {
		from = m.at.Load()
		first = nil
		to := from
		n := 0
		for n < chunk {
			next := to.next.Load()
			if next == nil {
				break
			}
			if n == 0 {
				first = next
			}
			to = next
			n++
		}
		// At the end of the list (the last node read or none), the next
		// claim starts a new pass from head.
		wraps = n < chunk || to.next.Load() == nil
		if wraps {
			to = &m.head
		}
		if m.hook != nil {
			m.hook("claim")
		}
		if m.at.CompareAndSwap(from, to) {
			return from, first, n, wraps
		}
	}
}

// visit judges n, read in prev.next, with next read in n.next: when kill
// reports n's cell dead, it deletes n's key if it still maps to n, and
// unlinks n. It reports whether n stays linked and alive (kept), and whether
// it deleted n's key.
func (m *Map[C]) visit(prev, n, next *node[C], kill func(*C) bool) (kept, deleted bool) {
	if !kill(&n.cell) {
		return true, false
	}
	deleted = m.remove(n)
	// An unlink: see "The sweep list". n is dead, so skipping it loses no
	// live node; a failed CAS leaves n listed, dead, for a later visit.
	if !prev.next.CompareAndSwap(n, next) {
		return true, deleted
	}
	if m.at.Load() == n {
		// This walker unlinked the node the bounded walks' cursor stands on
		// (the last it claimed, or as a Sweep or a walker a pass behind):
		// move the cursor back onto prev, whose next it has just swapped
		// past n, so that the next walker's unlinks act on the list again
		// and no node after n is skipped (see "Walks"). The CAS fails if a
		// walker claimed from n meanwhile; then at worst a dead node stays
		// listed until the next pass.
		m.at.CompareAndSwap(n, prev)
	}
	return false, deleted
}

// remove deletes n's key if it still maps to n, which is dead, and reports
// whether it did. (A Revive may have replaced n since the kill.)
func (m *Map[C]) remove(n *node[C]) bool {
	if m.cells.load(n.key()) != n {
		return false
	}
	if m.hook != nil {
		m.hook("remove")
	}
	key := n.key()
	h := m.cells.hash(key)
	s := m.cells.lock(h)
	cur, at := m.cells.locked(s, h, key)
	deleted := cur == n
	if deleted {
		m.cells.delete(s, h, at)
	}
	s.mu.Unlock()
	if deleted && m.maxKeys > 0 {
		m.count.Add(-1)
	}
	return deleted
}

// Drop deletes key if it still maps to dead, a cell its caller has just
// tombstoned (as a refund that empties a key does; a tombstone is never
// undone, so the cell is still dead), and reports whether it did: the key is
// then not held, as after a Sweep. Call it once per such tombstone.
//
// The dead cell stays in the sweep list until a walk or a Sweep unlinks it;
// a caller that met the tombstone meanwhile revives the key as after any
// eviction, listing a new node. No walk that unlinks it is due otherwise (the
// keys held do not count it, and a Revive's replacement leaves it listed just
// the same), so Drop owes the walks StepVisits visits for it, as an insertion
// at the threshold does, and pays a chunk of them when its debt completes
// one: see "Dead nodes left listed". In a map with neither an auto-sweep nor
// a key cap, those visits unlink the dead nodes out of the map and evict
// nothing.
func (m *Map[C]) Drop(key string, dead *C) bool {
	deleted := false
	if n := m.cells.load(key); n != nil && &n.cell == dead {
		if m.hook != nil {
			m.hook("drop")
		}
		deleted = m.remove(n)
	}
	m.step()
	return deleted
}

// Peek returns key's cell if there is one, and never inserts.
func (m *Map[C]) Peek(key string) (*C, bool) {
	if n := m.cells.load(key); n != nil {
		return &n.cell, true
	}
	return nil, false
}

// Revive is called by a caller that found dead, a tombstoned cell, under key.
// It puts a fresh cell in dead's place, unless a live cell already replaced it,
// and returns the live cell. When the key was deleted meanwhile, it inserts it
// again, without the key cap's check, evicting idle keys, if there are any,
// until there is room for it when that puts the map over the cap (see the
// package documentation).
func (m *Map[C]) Revive(key string, dead *C) *C {
	barren := false // the walk below went round the whole list and evicted no key
	if m.maxKeys > 0 && m.count.Load() >= int64(m.maxKeys) {
		if m.cells.load(key) == nil {
			// The re-insertion below will put the map over the cap: evict
			// idle keys first, if there are any, until there is room, so
			// that an excess lasts only while no key is idle.
			deleted, round := m.walk(MaxVisits, capChunk, m.judge(), int64(m.maxKeys))
			// Round the whole list without an eviction, the walk found no
			// key idle: a second walk would find none either. Otherwise it
			// saw only the nodes after the cursor, within its budget, and
			// the second walk goes on from where it stopped.
			barren = deleted == 0 && round
		}
	}
	if m.hook != nil {
		m.hook("revive")
	}
	stripe := m.listing.enter() // before the fresh node can be in the map: see SweepAll
	n, fresh, inserted := m.renew(key, dead)
	// Deferred, so that the fresh node (nil when a live cell replaced dead)
	// is listed, and counted out of listing, also when the walk below
	// panics: see list.
	defer m.list(fresh, stripe)
	if inserted && !barren && m.count.Load() > int64(m.maxKeys) {
		// The re-insertion put the map over the cap: other keys took the
		// room there was at the check above, or that the walk above made;
		// or the key was held at the check, by dead, and deleted since (a
		// walker's deletion after its kill), while other keys took the
		// room. Evict idle keys now, until the map is back within the cap
		// (count below cap + 1; count > maxKeys, so cap + 1 does not
		// overflow), unless the walk above has just gone round the whole
		// list and evicted none. Before the push, so that this caller's
		// fresh cell, not yet listed, cannot be the walk's victim.
		m.walk(MaxVisits, capChunk, m.judge(), int64(m.maxKeys)+1)
	}
	return &n.cell
}

// renew is Revive's change to the map: under the lock of key's shard, it
// returns the live node that replaced dead under key, if one did (and fresh
// nil); else it puts a fresh node in dead's place, or inserts it when key is
// not held (reserving its room under a key cap without the check, and
// reporting inserted), and returns it as n and fresh.
func (m *Map[C]) renew(key string, dead *C) (n, fresh *node[C], inserted bool) {
	h := m.cells.hash(key)
	s := m.cells.lock(h)
	defer s.mu.Unlock() // also when init panics
	old, at := m.cells.locked(s, h, key)
	if old != nil && &old.cell != dead {
		return old, nil, false
	}
	fresh = m.newNode(key)
	if old != nil {
		m.cells.put(s, at, fresh)
		return fresh, fresh, false
	}
	if m.maxKeys > 0 {
		m.count.Add(1)
		inserted = true
	}
	m.cells.insert(s, h, fresh, at)
	return fresh, fresh, inserted
}

// Sweep calls kill on every cell listed when it starts, and on none inserted
// after, in one pass. kill must tombstone the cell by CAS when its state
// equals a fresh cell's, and report whether the cell is dead. Each dead
// cell's key is deleted if it still maps to it. Sweep returns how many keys it
// deleted. It is safe to run concurrently with anything, Sweep included.
func (m *Map[C]) Sweep(kill func(*C) bool) int {
	n, _ := m.sweepTo(kill, nil, false)
	return n
}

// watchEvery is how many nodes a walk of SweepAll visits between its
// readings of listing.
const watchEvery = 256

// sweepTo is Sweep, stopping short of stop: it visits the nodes listed
// ahead of stop (pushed after it), or every node when stop is nil or is
// unlinked during the walk. With watch set, it reads listing every
// watchEvery visits, and at the end, and reports whether a reading found it
// zero.
func (m *Map[C]) sweepTo(kill func(*C) bool, stop *node[C], watch bool) (deleted int, idle bool) {
	prev := &m.head
	visits := 0
	for n := prev.next.Load(); n != nil && n != stop; {
		if visits++; watch && !idle && visits%watchEvery == 0 {
			idle = m.listing.idle(m.hook)
		}
		next := n.next.Load()
		kept, gone := m.visit(prev, n, next, kill)
		if gone {
			deleted++
		}
		if kept {
			prev = n
		}
		n = next
	}
	if watch && !idle {
		idle = m.listing.idle(m.hook)
	}
	return deleted, idle
}

// SweepMap calls kill on every cell in the map, as Sweep does on every
// listed one, and deletes the key of each cell kill reports dead if it still
// maps to it; it returns how many keys it deleted. Unlike Sweep, it reaches
// the cells of insertions and revivals that have published their node in
// the map and not yet listed it (an insertion that pays an auto-sweep step,
// or a revival that walks for the key cap, does so in between): a cell in
// the map throughout the call is visited, once (the pass loads each shard's
// array once and visits its nodes; a concurrent replacement of the array
// copies it and then leaves it as it was: see table.go), and one that is
// not was published during the call, or deleted, dead. It may also
// visit cells published during the call. It unlinks nothing: a node it
// finds dead stays listed until a walk or a Sweep meets it (Sweep first,
// then SweepMap, leaves only the nodes of cells it killed that were not
// listed, or listed after Sweep passed). Like Sweep, it is safe to run
// concurrently with anything.
func (m *Map[C]) SweepMap(kill func(*C) bool) int {
	deleted := 0
	m.cells.rangeNodes(func(n *node[C]) {
		if kill(&n.cell) && m.remove(n) {
			deleted++
		}
	})
	return deleted
}

// SweepAll calls kill on every cell in the map when it starts, as Sweep then
// SweepMap do, deletes the key of each cell kill reports dead if it still
// maps to it, and returns how many keys it deleted. It walks the list, and
// passes over the map only when an insertion or a revival was under way when
// it started and at each time its walk looked again (every watchEvery nodes,
// and at the end). The list's nodes lie in memory about in the order it is
// walked (they were allocated as they were pushed), where the map's hash
// order jumps about: a pass over the map of 100k or 1M keys takes some twenty
// times the walk.
//
// Why the walk reaches every cell in the map. An insertion (a revival) adds
// one to listing before it publishes its node in the map, and takes it off
// after it has listed the node (also when the walk it may make in between
// panics: see list), or found it publishes none; atomics are sequentially
// consistent. The count is striped (see inflight): an insertion takes its one
// off the stripe it added it to, and a reading finds listing zero when it
// reads each stripe zero in turn, so only if every insertion that had added
// its one before the reading began had taken it off before the reading read
// its stripe, before the reading ended. If SweepAll's reading at its start
// finds listing zero, every insertion that had added its one before SweepAll
// started had also taken it off by the end of that reading, after its push:
// its node was listed before the walk read head.next, and so is visited
// unless it is dead (unlinked nodes are dead). Any other insertion adds its
// one after SweepAll started, and publishes its node later still: a cell out
// of the walk's reach that is not dead was published after SweepAll started,
// and everyone who took it from the map did so later. If the reading at the
// start does not find listing zero, but a later reading, during the walk or
// at its end, does, every insertion that had added its one before SweepAll
// started has listed its node since, before that reading ended: before the
// walk read head.next, so the walk visited it, or after SweepAll read first,
// the node then at the front, so ahead of first (pushes go in front, and next
// leads to older nodes), where a second walk, from head to first, visits it.
// Insertions are short, so over a long walk a reading finds listing zero
// unless one stalls throughout, or keys flood in without a pause; only then
// does SweepMap reach the cells not yet listed. Either way, a cell in the map
// throughout the call, or published before it, is visited or dead.
func (m *Map[C]) SweepAll(kill func(*C) bool) int {
	quiet := m.listing.idle(m.hook) // before the walk reads head.next
	first := m.head.next.Load()
	n, idle := m.sweepTo(kill, nil, !quiet)
	switch {
	case quiet:
	case idle:
		more, _ := m.sweepTo(kill, first, false)
		n += more
	default:
		n += m.SweepMap(kill)
	}
	return n
}

// Len returns the number of keys held. While keys are inserted or deleted,
// it counts them one stripe of counters at a time, so it can be off by the
// insertions and deletions made during the call.
func (m *Map[C]) Len() int {
	return m.cells.size()
}
