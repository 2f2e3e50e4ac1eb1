package keyed_test

import (
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// cell is a test cell: a count changed by CAS, with dead as its tombstone.
type cell struct{ n atomic.Int64 }

const dead = -1

// kill tombstones an idle (zero) cell, and reports whether the cell is dead.
func kill(c *cell) bool { return c.n.CompareAndSwap(0, dead) || c.n.Load() == dead }

// judge returns kill: the test cells' idleness does not depend on time.
func judge() func(*cell) bool { return kill }

// newMap returns a map of test cells with the given options.
func newMap(autoSweep, maxKeys int) *keyed.Map[cell] {
	return keyed.New(nil, judge, hotlimit.Options{AutoSweep: autoSweep, MaxKeys: maxKeys})
}

// assertListed asserts that the sweep list holds exactly the keys in the map.
func assertListed(t *testing.T, m *keyed.Map[cell], want ...string) {
	t.Helper()
	got := keyed.Listed(m)
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got, "the sweep list holds exactly the keys held")
	assert.Len(t, got, m.Len())
}

// assertListedAfterSweep asserts that once a Sweep of nothing (a kill that
// tombstones nothing, and reports the dead) has visited every node, the sweep
// list holds exactly the keys in the map: walkers that raced may leave dead
// nodes listed, never a live one unlisted.
func assertListedAfterSweep(t *testing.T, m *keyed.Map[cell]) {
	t.Helper()
	held := m.Len()
	m.Sweep(func(c *cell) bool { return c.n.Load() == dead })
	assert.Equal(t, held, m.Len(), "a sweep of nothing deletes nothing")
	got := keyed.Listed(m)
	assert.Len(t, got, m.Len(), "the sweep list holds exactly the keys held")
	for _, k := range got {
		if _, ok := m.Peek(k); !ok {
			t.Errorf("key %q listed, not held", k)
			return
		}
	}
}

// add changes key's count by d the way a limiter does: CAS on the cell,
// reviving it when it is dead. It returns the cell it changed.
func add(m *keyed.Map[cell], key string, c *cell, d int64) *cell {
	for {
		v := c.n.Load()
		if v == dead {
			c = m.Revive(key, c)
			continue
		}
		if c.n.CompareAndSwap(v, v+d) {
			return c
		}
	}
}

func TestGetInsertsOnce(t *testing.T) {
	m := newMap(0, 0)
	a := m.Get("a")
	assert.Same(t, a, m.Get("a"))
	assert.NotSame(t, a, m.Get("b"))
	assert.Equal(t, 2, m.Len())
	p, ok := m.Peek("a")
	assert.True(t, ok)
	assert.Same(t, a, p)
	_, ok = m.Peek("zz")
	assert.False(t, ok)
	assert.Equal(t, 2, m.Len(), "Peek never inserts")
}

// TestLoadFindsWithoutInserting: Load returns the cell Get returns for a key
// held, and nil, inserting nothing, for a key not held or no longer held.
func TestLoadFindsWithoutInserting(t *testing.T) {
	m := newMap(0, 0)
	assert.Nil(t, m.Load("k"), "a key not held")
	assert.Zero(t, m.Len(), "Load inserts nothing")
	c := m.Get("k")
	require.NotNil(t, c)
	assert.Same(t, c, m.Load("k"), "the cell Get inserted")
	c.n.Add(1)
	assert.EqualValues(t, 1, m.Load("k").n.Load(), "the cell itself, not a copy")
	c.n.Add(-1)
	assert.Equal(t, 1, m.Sweep(kill))
	assert.Nil(t, m.Load("k"), "a key swept")
	assert.Zero(t, m.Len())
}

func TestSweepDeletesOnlyKilledCells(t *testing.T) {
	m := newMap(0, 0)
	add(m, "busy", m.Get("busy"), 1)
	m.Get("idle")
	assert.Equal(t, 1, m.Sweep(kill))
	assert.Equal(t, 1, m.Len())
	_, ok := m.Peek("idle")
	assert.False(t, ok)
	assert.Equal(t, 0, m.Sweep(kill))
}

func TestReviveReplacesOnlyTheDeadCell(t *testing.T) {
	m := newMap(0, 0)
	c := m.Get("k")
	require.True(t, kill(c))
	fresh := m.Revive("k", c)
	assert.NotSame(t, c, fresh)
	assert.Same(t, fresh, m.Get("k"))
	// A second caller holding the same dead cell gets the live one.
	assert.Same(t, fresh, m.Revive("k", c))
	// A Sweep that tombstoned c must not delete its live replacement.
	assert.Equal(t, 0, m.Sweep(func(*cell) bool { return false }))
	assert.Equal(t, 1, m.Len())
}

// TestSweepRacingUpdatesLosesNothing hammers keys with increments and
// decrements while a sweeper kills every idle cell: Sweep looping on its own
// goroutine (or Sweep and SweepMap in turns, or SweepAll, also while the
// workers insert idle keys, so that SweepAll often finds insertions under
// way: it walks again, or passes over the map), or the incremental walks of
// auto-sweep and of the key cap, paid by the workers' insertions of idle
// keys. A cell with a positive count is
// live, so it must stay mapped: a worker that holds one must find it under
// its key. At the end every count is zero, a sweep empties the map, and the
// sweep list is empty too.
func TestSweepRacingUpdatesLosesNothing(t *testing.T) {
	rounds := 20000
	if testing.Short() {
		rounds = 2000
	}
	for _, mode := range []string{"loop", "map", "all", "flood", "auto", "cap"} {
		t.Run("sweep="+mode, func(t *testing.T) {
			var m *keyed.Map[cell]
			looping := mode == "loop" || mode == "map" || mode == "all" || mode == "flood"
			switch mode {
			case "loop", "map", "all", "flood":
				m = newMap(0, 0)
			case "auto":
				m = newMap(8, 0)
			case "cap":
				m = newMap(0, 16)
			}
			var stop atomic.Bool
			var wg sync.WaitGroup
			var swept atomic.Int64
			if looping {
				wg.Go(func() {
					for !stop.Load() {
						if mode == "all" || mode == "flood" {
							swept.Add(int64(m.SweepAll(kill)))
							continue
						}
						swept.Add(int64(m.Sweep(kill)))
						if mode == "map" {
							swept.Add(int64(m.SweepMap(kill)))
						}
					}
				})
			}
			var workers sync.WaitGroup
			for g := range 8 {
				workers.Go(func() {
					// With a sweeper, on until it has swept at least once,
					// however late the scheduler starts it.
					for i := 0; i < rounds || looping && swept.Load() == 0; i++ {
						key := strconv.Itoa((g + i) % 5)
						c := m.Get(key)
						if c == nil {
							continue // the cap: every key held is live
						}
						c = add(m, key, c, 1)
						if !looping || mode == "flood" && i%4 == 0 {
							m.Get("idle-" + strconv.Itoa(g) + "-" + strconv.Itoa(i)) // pays a walk, or floods
						}
						if got := m.Get(key); got != c {
							t.Errorf("live cell of %q was replaced", key)
							return
						}
						add(m, key, c, -1)
					}
				})
			}
			workers.Wait()
			stop.Store(true)
			wg.Wait()
			if looping {
				assert.Positive(t, swept.Load(), "the sweeper raced the workers")
			} else {
				assert.Less(t, m.Len(), 8*rounds/2, "the walks evicted idle keys")
			}
			m.Sweep(kill)
			assert.Zero(t, m.Len())
			assert.Empty(t, keyed.Listed(m))
		})
	}
}

func TestSweepUnlinksWhatItEvicts(t *testing.T) {
	m := newMap(0, 0)
	for _, k := range []string{"a", "b", "c", "d"} {
		m.Get(k)
	}
	add(m, "b", m.Get("b"), 1)
	add(m, "d", m.Get("d"), 1)
	assertListed(t, m, "a", "b", "c", "d")
	assert.Equal(t, 2, m.Sweep(kill))
	assertListed(t, m, "b", "d")
	// A caller revives b between the kill and the delete: the replacement
	// stays, listed, and the dead cell is unlinked.
	c := m.Get("b")
	add(m, "b", c, -1)
	assert.Zero(t, m.Sweep(func(x *cell) bool {
		if x != c || !kill(x) {
			return false
		}
		assert.NotSame(t, c, m.Revive("b", c))
		return true
	}))
	assertListed(t, m, "b", "d")
	fresh, _ := m.Peek("b")
	assert.NotSame(t, c, fresh)
}

// TestSweepRacingAPush forces a push at the front of the list between a
// walker's read of the first node and its unlink: the kill function inserts
// a key, then kills. The unlink's CAS on head.next fails, so the dead node
// stays listed, with the new key before it, until the next pass unlinks it;
// the map is right throughout.
func TestSweepRacingAPush(t *testing.T) {
	m := newMap(0, 0)
	m.Get("a")
	m.Get("b") // the first node
	var seen []*cell
	n := m.Sweep(func(c *cell) bool {
		seen = append(seen, c)
		if len(seen) == 1 {
			m.Get("c") // pushed before b, as b is killed
		}
		return kill(c)
	})
	require.Len(t, seen, 2, "c, pushed during the pass, is not visited")
	assert.Equal(t, 2, n)
	assert.Equal(t, 1, m.Len())
	assert.Equal(t, []string{"c", "b"}, keyed.Listed(m), "b's unlink lost the race to the push: b stays, dead")
	add(m, "c", m.Get("c"), 1)
	assert.Zero(t, m.Sweep(kill), "b's key is gone already")
	assertListed(t, m, "c")
}

// TestConcurrentUnlinksNeverLoseALiveNode forces two walkers to unlink
// neighbours: walker A reads n.next = m, then, before A's unlink of n, walker
// B (which kept n, live when B visited it) unlinks m by CAS on n.next. A's
// unlink then links m, dead, behind p again. No live node is lost: o stays
// listed and mapped, and A, walking on, unlinks m.
func TestConcurrentUnlinksNeverLoseALiveNode(t *testing.T) {
	mp := newMap(0, 0)
	for _, k := range []string{"o", "m", "n", "p"} { // listed p, n, m, o
		mp.Get(k)
	}
	cells := map[string]*cell{}
	for _, k := range []string{"o", "m", "n", "p"} {
		cells[k], _ = mp.Peek(k)
	}
	add(mp, "p", cells["p"], 1)
	add(mp, "o", cells["o"], 1)
	require.Equal(t, []string{"p", "n", "m", "o"}, keyed.Listed(mp))
	deletedByB := -1
	var relinked []string
	deletedByA := mp.Sweep(func(c *cell) bool {
		switch {
		case c == cells["n"] && deletedByB < 0:
			deletedByB = mp.Sweep(func(c *cell) bool { return c == cells["m"] && kill(c) })
		case c == cells["m"] && deletedByB >= 0 && relinked == nil:
			relinked = keyed.Listed(mp) // A's next visit, right after its unlink of n
		}
		return kill(c)
	})
	assert.Equal(t, 1, deletedByB, "B deleted m")
	assert.Equal(t, 1, deletedByA, "A deleted n, and found m dead")
	assert.Equal(t, []string{"p", "m", "o"}, relinked, "A's unlink of n relinked m, dead")
	assert.Equal(t, 2, mp.Len())
	for _, k := range []string{"p", "o"} {
		c, ok := mp.Peek(k)
		require.True(t, ok, k)
		assert.Same(t, cells[k], c, k)
	}
	assertListed(t, mp, "p", "o")
}

// TestSweepUnlinksTheLastNode evicts every key, the oldest included: the list
// empties with the map.
func TestSweepUnlinksTheLastNode(t *testing.T) {
	m := newMap(0, 0)
	m.Get("a")
	assert.Equal(t, 1, m.Sweep(kill))
	assertListed(t, m)
	m.Get("b")
	m.Get("c")
	assert.Equal(t, 2, m.Sweep(kill))
	assertListed(t, m)
	m.Get("d")
	assertListed(t, m, "d")
}

// TestAutoSweepVisitsABoundedNumberOfCells inserts many idle keys into a map
// with auto-sweep on: no insertion visits more than a chunk of cells, and the keys held stay bounded by the threshold, not by the keys
// inserted.
func TestAutoSweepVisitsABoundedNumberOfCells(t *testing.T) {
	const threshold = 1000
	inserts := 200_000
	if testing.Short() {
		inserts = 20_000
	}
	m := newMap(threshold, 0)
	visits, most := 0, 0
	keyed.OnWalk(m, func(v int) { visits += v })
	for i := range inserts {
		visits = 0
		m.Get(strconv.Itoa(i))
		most = max(most, visits)
		require.LessOrEqual(t, m.Len(), 2*threshold, "insert %d: the idle keys are swept as fast as they come", i)
	}
	assert.Equal(t, keyed.SweepChunk, most, "an insertion pays one chunk of visits, no more")
	assert.GreaterOrEqual(t, m.Len(), threshold-keyed.SweepChunk)
	assert.Len(t, keyed.Listed(m), m.Len(), "one goroutine: every unlink takes effect")
}

// TestAutoSweepKeepsLiveKeys mixes live keys (a positive count) among idle
// ones: the sweep never evicts a live key, and the keys held stay below twice
// the live keys plus the threshold.
func TestAutoSweepKeepsLiveKeys(t *testing.T) {
	const threshold, live = 100, 5000
	idle := 100_000
	if testing.Short() {
		idle = 20_000
	}
	m := newMap(threshold, 0)
	for i := range live {
		k := "live-" + strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	for i := range idle {
		m.Get("idle-" + strconv.Itoa(i))
		require.LessOrEqual(t, m.Len(), 2*live+threshold+keyed.SweepChunk, "insert %d", i)
	}
	for i := range live {
		c, ok := m.Peek("live-" + strconv.Itoa(i))
		require.True(t, ok, "live key %d kept", i)
		assert.Equal(t, int64(1), c.n.Load())
	}
}

// TestAutoSweepStepsUnderContention inserts idle keys from many goroutines:
// no walk visits more than a chunk of cells, and as concurrent walkers claim
// distinct nodes, none of their visits is wasted, so the keys held stay
// bounded by the threshold.
func TestAutoSweepStepsUnderContention(t *testing.T) {
	const threshold, workers = 1000, 8
	per := 50_000
	if testing.Short() {
		per = 10_000
	}
	m := newMap(threshold, 0)
	var most atomic.Int64
	keyed.OnWalk(m, func(v int) {
		for cur := most.Load(); int64(v) > cur && !most.CompareAndSwap(cur, int64(v)); cur = most.Load() {
		}
	})
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range per {
				m.Get(strconv.Itoa(g) + "-" + strconv.Itoa(i))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int64(keyed.SweepChunk))
	assert.Positive(t, most.Load())
	assert.Less(t, m.Len(), 4*threshold, "of %d keys inserted", workers*per)
	assertListedAfterSweep(t, m)
}

func TestMaxKeysEvictsAnIdleKeyFirst(t *testing.T) {
	m := newMap(0, 3)
	add(m, "a", m.Get("a"), 1)
	m.Get("idle")
	add(m, "c", m.Get("c"), 1)
	d := m.Get("d")
	require.NotNil(t, d, "an idle key made room")
	assert.Equal(t, 3, m.Len())
	_, ok := m.Peek("idle")
	assert.False(t, ok, "the idle key was the one evicted")
	for _, k := range []string{"a", "c"} {
		c, ok := m.Peek(k)
		require.True(t, ok, k)
		assert.Equal(t, int64(1), c.n.Load(), k)
	}
	assertListed(t, m, "a", "c", "d")
}

func TestMaxKeysDeniesANewKeyWhenNoneIsIdle(t *testing.T) {
	m := newMap(0, 2)
	a := add(m, "a", m.Get("a"), 1)
	b := add(m, "b", m.Get("b"), 1)
	assert.Nil(t, m.Get("c"), "no idle key: the new key is denied")
	assert.Equal(t, 2, m.Len())
	_, ok := m.Peek("c")
	assert.False(t, ok)
	assert.Same(t, a, m.Get("a"), "held keys keep their cells")
	assert.Same(t, b, m.Get("b"))
	// Once a key is idle, a new key takes its place.
	add(m, "a", a, -1)
	assert.NotNil(t, m.Get("c"))
	assertListed(t, m, "b", "c")
}

// TestMaxKeysUnderAFlood hammers a capped map with distinct keys from many
// goroutines, each made live on arrival and idle after a while, while one
// key stays live throughout: the keys held or reserved exceed the cap only by
// the keys re-inserted by callers whose fresh key was evicted under them, one
// per goroutine at most, the live key is never evicted, and the list matches
// the map at the end. The bound is checked during the flood on the cap's
// count, which is exact: Len, which sums xsync's striped counters one by one
// while they change, can read more keys than were ever held at once (twice
// the goroutines over the cap has been seen), so it is checked at the end.
func TestMaxKeysUnderAFlood(t *testing.T) {
	const maxKeys, workers = 500, 8
	per := 20_000
	if testing.Short() {
		per = 4000
	}
	m := newMap(0, maxKeys)
	hot := add(m, "hot", m.Get("hot"), 1)
	var denied, over atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			var mine []*cell
			var keys []string
			for i := range per {
				k := strconv.Itoa(g) + "-" + strconv.Itoa(i)
				c := m.Get(k)
				if c == nil {
					denied.Add(1)
				} else {
					mine = append(mine, add(m, k, c, 1))
					keys = append(keys, k)
				}
				if len(mine) > 50 { // the oldest goes idle
					add(m, keys[0], mine[0], -1)
					mine, keys = mine[1:], keys[1:]
				}
				if keyed.Reserved(m) > maxKeys+workers {
					over.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, over.Load(), "keys held or reserved stayed within the cap plus one per goroutine")
	assert.LessOrEqual(t, m.Len(), maxKeys+workers)
	assert.Same(t, hot, m.Get("hot"), "the live key kept its cell")
	assert.Equal(t, int64(1), hot.n.Load())
	t.Logf("denied %d of %d", denied.Load(), workers*per)
	assertListedAfterSweep(t, m)
}

// TestKeysAreCopiedOnInsert: a key that aliases a buffer the caller reuses
// after the call (a miss and a revival, the paths that store a key) leaves
// the map's keys intact, whether it is copied into its node's allocation (up
// to 15, 31 or 47 bytes) or into one of its own (longer).
func TestKeysAreCopiedOnInsert(t *testing.T) {
	for _, size := range []int{1, 5, 15, 16, 31, 32, 47, 48, 100} {
		key := strings.Repeat("a", size)
		other := strings.Repeat("o", size)
		m := newMap(0, 0)
		buf := []byte(key)
		transient := func() string { return unsafe.String(&buf[0], len(buf)) }
		a := m.Get(transient())
		add(m, key, a, 1)
		copy(buf, other)
		_, ok := m.Peek(key)
		assert.True(t, ok, "%d bytes: the key inserted by Get is a copy", size)
		_, ok = m.Peek(other)
		assert.False(t, ok, "%d bytes", size)

		add(m, key, a, -1)
		require.Equal(t, 1, m.Sweep(kill))
		copy(buf, key)
		revived := m.Revive(transient(), a)
		copy(buf, other)
		c, ok := m.Peek(key)
		assert.True(t, ok, "%d bytes: the key stored by Revive is a copy", size)
		assert.Same(t, revived, c, "%d bytes", size)
		assert.Equal(t, 1, m.Len(), "%d bytes", size)
	}
}

// TestReviveAtTheCapEvictsAnIdleKeyFirst: a caller whose idle key was evicted
// under it re-inserts the key without the cap's check; when the map is at the
// cap and a key is idle, that key is evicted first, so the cap holds.
func TestReviveAtTheCapEvictsAnIdleKeyFirst(t *testing.T) {
	m := newMap(0, 2)
	x := m.Get("x") // idle: the caller holds its cell
	a := add(m, "a", m.Get("a"), 1)
	require.Equal(t, 1, m.Sweep(kill), "x evicted under its caller")
	m.Get("b") // idle; the map is at the cap again
	require.Equal(t, 2, m.Len())
	revived := add(m, "x", x, 1) // reads the tombstone, revives x
	assert.NotSame(t, x, revived)
	assert.Equal(t, 2, m.Len(), "b, idle, made room for x")
	_, ok := m.Peek("b")
	assert.False(t, ok, "b was the key evicted")
	c, ok := m.Peek("x")
	require.True(t, ok)
	assert.Same(t, revived, c)
	assert.Equal(t, int64(1), c.n.Load())
	held, ok := m.Peek("a")
	require.True(t, ok)
	assert.Same(t, a, held, "the live key kept its cell")
	assertListedAfterSweep(t, m)
}

// A key cap is an option, not validated: a huge one (by mistake, or from
// configuration) must not allocate its table up front, which would end the
// process, and still caps the keys.
func TestHugeKeyCapIsNotAllocatedUpFront(t *testing.T) {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m := newMap(0, math.MaxInt)
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(256<<20), "bytes allocated by New")
	for i := range 10 {
		require.NotNil(t, m.Get(strconv.Itoa(i)))
	}
	assert.Equal(t, 10, m.Len())
}

// TestNewKeyOverTheCapEvictsUntilThereIsRoom: a revival put the map one key
// over the cap (no key was idle then); once two keys are idle, a new key's
// walk evicts both, not only the first, and the new key gets its room: it is
// not denied while idle keys were there to make room, and the map is back
// within the cap.
func TestNewKeyOverTheCapEvictsUntilThereIsRoom(t *testing.T) {
	m := newMap(0, 1)
	x := m.Get("x")                               // idle: the caller holds its cell
	require.NotNil(t, add(m, "b", m.Get("b"), 1)) // b evicts x, and is not idle
	require.Equal(t, 1, m.Len())
	x = add(m, "x", x, 1) // x revives past the cap: no key is idle
	require.Equal(t, 2, m.Len(), "the revival's excess")
	require.Nil(t, m.Get("c"), "no idle key: a new key is denied")

	add(m, "x", x, -1) // both keys idle again
	b, _ := m.Peek("b")
	add(m, "b", b, -1)
	assert.NotNil(t, m.Get("d"), "a new key once both keys held are idle")
	assert.Equal(t, 1, m.Len(), "keys held: d alone, within the cap")
	assert.Equal(t, int64(1), keyed.Reserved(m))
	assertListedAfterSweep(t, m)
}

// TestReviveBetweenADeletionsCheckAndItsDeleteKeepsTheLiveCell forces a
// revival between a sweeper's check that the key still maps to the cell it
// killed and its deletion: the caller that met the tombstone puts a fresh
// cell under the key and counts in it. The deletion must then leave the key
// alone: deleting it would drop the live cell, and the count in it, under
// its caller.
func TestReviveBetweenADeletionsCheckAndItsDeleteKeepsTheLiveCell(t *testing.T) {
	for _, maxKeys := range []int{0, 4} {
		m := newMap(0, maxKeys)
		x := m.Get("x") // idle: its caller holds the cell
		var revived *cell
		keyed.OnStep(m, func(step string) {
			if step == "remove" && revived == nil {
				revived = add(m, "x", x, 1) // meets the tombstone, revives
			}
		})
		assert.Zero(t, m.Sweep(kill), "cap %d: the key maps to a live cell again", maxKeys)
		require.NotNil(t, revived, "cap %d: the revival ran between the check and the delete", maxKeys)
		c, ok := m.Peek("x")
		require.True(t, ok, "cap %d: the revived key is held", maxKeys)
		assert.Same(t, revived, c, "cap %d", maxKeys)
		assert.EqualValues(t, 1, c.n.Load(), "cap %d: its count kept", maxKeys)
		if maxKeys > 0 {
			assert.EqualValues(t, 1, keyed.Reserved(m), "cap %d: one key held", maxKeys)
		}
		assertListedAfterSweep(t, m)
	}
}

// TestMaxKeysKeyInsertedSinceTheMissIsNotDenied forces another caller's
// insertion of the same new key between a caller's miss and its reservation,
// taking the cap's last room: the key is then held, and the caller gets its
// cell rather than the cap's denial, though no key is idle to make room.
func TestMaxKeysKeyInsertedSinceTheMissIsNotDenied(t *testing.T) {
	m := newMap(0, 2)
	add(m, "a", m.Get("a"), 1)
	var other *cell
	keyed.OnStep(m, func(step string) {
		if step == "miss" && other == nil {
			other = &cell{} // armed once: the insertion below misses too
			other = add(m, "y", m.Get("y"), 1)
		}
	})
	c := m.Get("y")
	require.NotNil(t, other, "the other caller inserted y between the miss and the reservation")
	require.NotNil(t, c, "y is held: not denied by the cap")
	assert.Same(t, other, c, "the cell the other caller inserted")
	assert.Equal(t, 2, m.Len())
	assert.EqualValues(t, 2, keyed.Reserved(m))
	assertListed(t, m, "a", "y")
}

// TestMaxKeysKeyBeingInsertedIsNotDenied forces a caller's miss of a new key
// during another caller's insertion of that key, which takes the cap's last
// room and pays an auto-sweep step, whose walk runs the hook: the key is
// held once that insertion completes, with its full quota, so the caller
// must get its cell, not the cap's denial. No key is idle to make room. (A
// step between the reservation and the key's insertion into the map would
// have the cap deny it; the contention on the room itself, which no hook
// reaches, is in TestMaxKeysFirstRequestsOfOneKeyAtTheLastRoomAllGetIt.)
func TestMaxKeysKeyBeingInsertedIsNotDenied(t *testing.T) {
	m := newMap(1, 2)
	add(m, "a", m.Get("a"), 1)
	// Owe the auto-sweep all but one step of a chunk: the next insertion's
	// step walks, and the walk runs the hook.
	for range (keyed.SweepChunk+keyed.StepVisits-1)/keyed.StepVisits - 1 {
		m.Drop("none", nil)
	}
	var other *cell
	armed := true
	keyed.OnStep(m, func(step string) {
		if step == "claim" && armed {
			armed = false
			other = m.Get("y") // y's first insertion is under way
		}
	})
	c := m.Get("y")
	require.False(t, armed, "the other caller's Get ran during the insertion of y")
	require.NotNil(t, c, "the insertion of y got the last room")
	assert.NotNil(t, other, "y is held: not denied by the cap")
	assert.Same(t, c, other, "the one cell of y")
	assert.Equal(t, 2, m.Len())
	assert.EqualValues(t, 2, keyed.Reserved(m))
	assertListed(t, m, "a", "y")
}
