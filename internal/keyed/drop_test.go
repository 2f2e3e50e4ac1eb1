package keyed_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestDropDeletesOnlyTheDeadCellItNames: Drop deletes a key that still maps
// to the tombstoned cell it names, frees its room under the key cap, and
// leaves the dead node listed for a walk to unlink; it deletes nothing when
// the key maps to another cell (a caller revived it meanwhile) or to a live
// one, or is not held.
func TestDropDeletesOnlyTheDeadCellItNames(t *testing.T) {
	m := newMap(0, 4)
	a := m.Get("a")
	require.NotNil(t, m.Get("b"))
	assert.False(t, m.Drop("nobody", a), "a key not held")

	require.True(t, kill(a))
	revived := m.Revive("a", a)
	require.NotSame(t, a, revived)
	assert.False(t, m.Drop("a", a), "the key maps to the cell that revived it")
	assert.Equal(t, 2, m.Len())

	require.True(t, kill(revived))
	assert.True(t, m.Drop("a", revived))
	assert.Equal(t, 1, m.Len())
	assert.EqualValues(t, 1, keyed.Reserved(m), "the cap's count freed")
	_, held := m.Peek("a")
	assert.False(t, held)
	assert.False(t, m.Drop("a", revived), "once")
	assert.Contains(t, keyed.Listed(m), "a", "the dead node stays listed until a walk")
	assertListedAfterSweep(t, m)
	assert.Equal(t, []string{"b"}, keyed.Listed(m))
}

// refundCycle takes one request from key and gives it back, the way a
// limiter's emptying refund does: it tombstones the cell it counted on and
// drops the key. It returns false when the key cap denied the key.
func refundCycle(m *keyed.Map[cell], key string) bool {
	c := m.Get(key)
	if c == nil {
		return false
	}
	c = add(m, key, c, 1)
	if !c.n.CompareAndSwap(1, dead) {
		panic("the cycle's cell changed under it")
	}
	m.Drop(key, c)
	return true
}

// TestDroppedNodesAreFreedWithoutASweep takes and gives back requests on a
// few keys, and on a flood of distinct keys, in maps that free memory by
// themselves (auto-sweep, a key cap): each emptying refund leaves its dead
// node listed, and the next request inserts a new one. The walks must unlink
// the dead nodes as they come, so that the list, which holds their memory,
// stays bounded while Len reads zero; without a walk paid for them, a map
// below its auto-sweep threshold, or below its cap, never walks, and the
// list grows by a node per refund.
func TestDroppedNodesAreFreedWithoutASweep(t *testing.T) {
	const cycles = 20_000
	for _, tc := range []struct {
		name               string
		autoSweep, maxKeys int
		keys               int // 0: a new key each cycle
	}{
		{"auto-sweep/same-keys", 64, 0, 4},
		{"auto-sweep/new-keys", 64, 0, 0},
		{"cap/same-keys", 0, 64, 4},
		{"cap/new-keys", 0, 64, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMap(tc.autoSweep, tc.maxKeys)
			for i := range cycles {
				k := "new-" + strconv.Itoa(i)
				if tc.keys > 0 {
					k = strconv.Itoa(i % tc.keys)
				}
				require.True(t, refundCycle(m, k), "cycle %d: the cap denied a key though none is held", i)
			}
			assert.Zero(t, m.Len(), "every key dropped")
			assert.Zero(t, keyed.Reserved(m), "the cap's room all released")
			// A pass over L nodes is paid by the L/3 refunds made meanwhile,
			// whose nodes the next pass unlinks: the list stays within a few
			// chunks, nowhere near a node per cycle.
			assert.LessOrEqual(t, len(keyed.Listed(m)), 4*keyed.SweepChunk, "dead nodes listed")
			assertListedAfterSweep(t, m)
			assert.Empty(t, keyed.Listed(m))
		})
	}
}

// fullOf returns a map capped at maxKeys holding the live keys given (count
// 1 each) and the idle ones (count 0), and the cells by key.
func fullOf(maxKeys int, live, idle []string) (*keyed.Map[cell], map[string]*cell) {
	m := newMap(0, maxKeys)
	cells := map[string]*cell{}
	for _, k := range idle {
		cells[k] = m.Get(k)
	}
	for _, k := range live {
		cells[k] = add(m, k, m.Get(k), 1)
	}
	return m, cells
}

// emptyingRefund tombstones c, whose count is 1, as a refund that empties
// it does, and drops key: it returns what Drop reported.
func emptyingRefund(t *testing.T, m *keyed.Map[cell], key string, c *cell) bool {
	t.Helper()
	require.True(t, c.n.CompareAndSwap(1, dead), "the refund empties %q", key)
	return m.Drop(key, c)
}

// TestReviveBetweenDropsLoadAndItsDeletionKeepsTheRevivedKey forces a caller
// that met the tombstone to revive the key between Drop's load, which finds
// the dead cell, and its deletion: Drop deletes nothing, the key keeps the
// revived cell, and the cap's count is the keys held.
func TestReviveBetweenDropsLoadAndItsDeletionKeepsTheRevivedKey(t *testing.T) {
	m, cells := fullOf(4, []string{"k", "a", "b"}, nil)
	var revived *cell
	keyed.OnStep(m, func(step string) {
		if step == "drop" && revived == nil {
			revived = add(m, "k", cells["k"], 1) // meets the tombstone: revives
		}
	})
	assert.False(t, emptyingRefund(t, m, "k", cells["k"]), "the key maps to the revived cell")
	require.NotNil(t, revived, "the revival ran between the load and the deletion")
	assert.NotSame(t, cells["k"], revived)
	c, ok := m.Peek("k")
	require.True(t, ok, "the revived key is held")
	assert.Same(t, revived, c)
	assert.EqualValues(t, 1, c.n.Load(), "the revived cell keeps its count")
	assert.Equal(t, 3, m.Len())
	assert.EqualValues(t, 3, keyed.Reserved(m))
	assertListedAfterSweep(t, m)
	assertListed(t, m, "k", "a", "b")
}

// TestSweepBetweenDropsLoadAndItsDeletionReleasesOnce forces a Sweep, which
// finds the cell dead, to delete and unlink the key between Drop's load and
// its deletion: Drop deletes nothing, the cap's room is released once, and
// the cap then admits exactly as many new keys as it has room for.
func TestSweepBetweenDropsLoadAndItsDeletionReleasesOnce(t *testing.T) {
	const maxKeys = 4
	m, cells := fullOf(maxKeys, []string{"k", "a", "b"}, nil)
	swept := -1
	keyed.OnStep(m, func(step string) {
		if step == "drop" && swept < 0 {
			swept = m.Sweep(kill)
		}
	})
	assert.False(t, emptyingRefund(t, m, "k", cells["k"]), "the Sweep deleted it first")
	assert.Equal(t, 1, swept, "the Sweep deleted the dead key")
	assert.Equal(t, 2, m.Len())
	assert.EqualValues(t, 2, keyed.Reserved(m), "released once")
	assertListed(t, m, "a", "b")
	for _, k := range []string{"x", "y"} {
		require.NotNil(t, m.Get(k), k)
		add(m, k, m.Load(k), 1)
	}
	assert.Nil(t, m.Get("z"), "the cap holds: every key live")
	assert.EqualValues(t, maxKeys, keyed.Reserved(m))
}

// TestDropWhileAWalkerJudgesTheCellReleasesOnce forces an emptying refund
// and its Drop inside a walker's call of kill on the cell, before kill reads
// it: kill reports the cell dead, and the walker deletes nothing (Drop did)
// and unlinks it; the cap's room is released once.
func TestDropWhileAWalkerJudgesTheCellReleasesOnce(t *testing.T) {
	m, cells := fullOf(4, []string{"k", "a", "b"}, nil)
	dropped := false
	deleted := m.Sweep(func(c *cell) bool {
		if c == cells["k"] {
			dropped = emptyingRefund(t, m, "k", c)
		}
		return kill(c)
	})
	assert.True(t, dropped, "Drop deleted the key")
	assert.Zero(t, deleted, "the walker found the key gone")
	assert.Equal(t, 2, m.Len())
	assert.EqualValues(t, 2, keyed.Reserved(m), "released once")
	assertListed(t, m, "a", "b")
}

// TestReviveAfterDropAtTheCap: an emptying refund drops a key, a new key takes
// its room, and a caller that held the dropped key's cell then meets the
// tombstone and revives the key: with an idle key to evict, Revive evicts it
// first and the map stays at the cap; with none, the revival puts the map one
// key over the cap. Either way, once every key is swept, the cap's count is
// back to zero and the cap admits a full set of new keys.
func TestReviveAfterDropAtTheCap(t *testing.T) {
	const maxKeys = 4
	for _, idle := range []bool{true, false} {
		t.Run(map[bool]string{true: "an idle key", false: "no idle key"}[idle], func(t *testing.T) {
			live, idleKeys := []string{"k", "a", "b"}, []string{"i"}
			if !idle {
				live, idleKeys = append(live, "i"), nil
			}
			m, cells := fullOf(maxKeys, live, idleKeys)
			held := cells["k"]                               // a caller loaded k's cell, and stalls
			add(m, "k", held, 1)                             // its request: count 2
			add(m, "k", held, -1)                            // another's refund
			require.True(t, emptyingRefund(t, m, "k", held)) // the last refund empties k
			require.NotNil(t, m.Get("y"), "y takes k's room")
			add(m, "y", m.Load("y"), 1)
			require.EqualValues(t, maxKeys, keyed.Reserved(m))

			revived := add(m, "k", held, 1) // the stalled caller meets the tombstone
			assert.NotSame(t, held, revived)
			c, ok := m.Peek("k")
			require.True(t, ok)
			assert.Same(t, revived, c)
			if idle {
				assert.Equal(t, maxKeys, m.Len(), "the idle key made room")
				_, ok := m.Peek("i")
				assert.False(t, ok, "the idle key was evicted")
			} else {
				assert.Equal(t, maxKeys+1, m.Len(), "a revival may exceed the cap by one")
			}
			assert.EqualValues(t, m.Len(), keyed.Reserved(m))

			// Every key goes idle and is swept: the cap admits a full set again.
			for _, k := range []string{"k", "a", "b", "i", "y"} {
				if c, ok := m.Peek(k); ok {
					add(m, k, c, -c.n.Load())
				}
			}
			m.Sweep(kill)
			assert.Zero(t, m.Len())
			assert.Zero(t, keyed.Reserved(m), "no reservation leaked")
			assertListed(t, m)
			for i := range maxKeys {
				k := "new-" + strconv.Itoa(i)
				require.NotNil(t, m.Get(k), k)
				add(m, k, m.Load(k), 1)
			}
			assert.Nil(t, m.Get("one-more"))
		})
	}
}

// TestDropBetweenRevivesCheckAndItsInsertionKeepsTheCap forces an emptying
// refund's Drop, and a new key taking the room it freed, between the key cap
// check of a caller that met the refund's tombstone (which finds the key
// held, by the dead cell) and its re-insertion: the re-insertion puts the map
// over the cap, so Revive evicts the idle key, and the map is back at the cap.
func TestDropBetweenRevivesCheckAndItsInsertionKeepsTheCap(t *testing.T) {
	const maxKeys = 4
	m, cells := fullOf(maxKeys, []string{"k", "a"}, []string{"i"})
	require.NotNil(t, add(m, "b", m.Get("b"), 1))
	k := cells["k"]
	require.True(t, k.n.CompareAndSwap(1, dead), "the refund's tombstone")
	armed := true
	keyed.OnStep(m, func(step string) {
		if step != "revive" || !armed {
			return
		}
		armed = false
		assert.True(t, m.Drop("k", k), "the refund's Drop")
		add(m, "y", m.Get("y"), 1)
	})
	revived := add(m, "k", k, 1) // a caller that loaded k meets the tombstone
	require.False(t, armed, "the Drop ran between the check and the insertion")
	assert.NotSame(t, k, revived)
	assert.Equal(t, maxKeys, m.Len())
	assert.EqualValues(t, maxKeys, keyed.Reserved(m))
	_, ok := m.Peek("i")
	assert.False(t, ok, "the idle key made room")
	for _, key := range []string{"k", "a", "b", "y"} {
		c, ok := m.Peek(key)
		if assert.True(t, ok, key) {
			assert.EqualValues(t, 1, c.n.Load(), key)
		}
	}
	assertListedAfterSweep(t, m)
	assertListed(t, m, "k", "a", "b", "y")
}

// TestDropRacingTrafficLosesNothing hammers a few keys with requests whose
// refunds empty them (the last one out tombstones the cell and drops the
// key, as fixedwindow's and slidingcounter's refunds do), while a Sweep loops
// or the walks of auto-sweep and the key cap run, or all of them at once: a cell that a request still
// counts on is never replaced under its key, and at the end every count is
// zero, nothing is held or reserved, the sweep list is empty, and a capped
// map admits a full set of new keys again.
func TestDropRacingTrafficLosesNothing(t *testing.T) {
	rounds := 5000
	if testing.Short() {
		rounds = 1000
	}
	const maxKeys = 16
	for _, mode := range []string{"loop", "auto", "cap", "all"} {
		t.Run("sweep="+mode, func(t *testing.T) {
			var m *keyed.Map[cell]
			switch mode {
			case "loop":
				m = newMap(0, 0)
			case "auto":
				m = newMap(8, 0)
			case "cap":
				m = newMap(0, maxKeys)
			case "all":
				m = newMap(8, maxKeys)
			}
			var stop atomic.Bool
			var sweeper sync.WaitGroup
			var swept, drops atomic.Int64
			sweeping := mode == "loop" || mode == "all"
			if sweeping {
				sweeper.Go(func() {
					for !stop.Load() {
						swept.Add(int64(m.Sweep(kill)))
					}
				})
			}
			var workers sync.WaitGroup
			for g := range 8 {
				workers.Go(func() {
					for i := 0; i < rounds || sweeping && swept.Load() == 0; i++ {
						key := strconv.Itoa((g + i) % 5)
						c := m.Get(key)
						if c == nil {
							continue // the cap: every key held is live
						}
						c = add(m, key, c, 1)
						if mode != "loop" && i%4 == 0 {
							m.Get("idle-" + strconv.Itoa(g) + "-" + strconv.Itoa(i))
						}
						if got := m.Load(key); got != c {
							t.Errorf("the cell %q counts on was replaced", key)
							return
						}
						// The refund: the last one out empties the cell.
						for {
							v := c.n.Load()
							next := v - 1
							if next == 0 {
								next = dead
							}
							if c.n.CompareAndSwap(v, next) {
								if next == dead {
									m.Drop(key, c)
									drops.Add(1)
								}
								break
							}
						}
					}
				})
			}
			workers.Wait()
			stop.Store(true)
			sweeper.Wait()
			assert.Positive(t, drops.Load(), "refunds emptied keys")
			if sweeping {
				assert.Positive(t, swept.Load(), "the sweeper raced the workers")
			}
			m.Sweep(kill)
			assert.Zero(t, m.Len())
			assert.Zero(t, keyed.Reserved(m))
			assert.Empty(t, keyed.Listed(m))
			if mode == "cap" || mode == "all" {
				for i := range maxKeys {
					k := "new-" + strconv.Itoa(i)
					require.NotNil(t, m.Get(k), k)
					add(m, k, m.Load(k), 1)
				}
				assert.Nil(t, m.Get("one-more"))
			}
		})
	}
}

// TestDroppedNodesAreFreedInAMapThatEvictsNothing takes and gives back
// requests on a few keys, and on a flood of distinct keys, in a map with
// neither an auto-sweep nor a key cap, beside keys held idle and keys held
// live, and no Sweep: the dead nodes the refunds leave must still be
// unlinked as they come, or a limiter never swept, on a fixed set of keys,
// would grow by a node per refund while Len read its keys; and the visits
// that unlink them must evict nothing, the map evicting only on Sweep.
func TestDroppedNodesAreFreedInAMapThatEvictsNothing(t *testing.T) {
	const cycles, held = 20_000, 100
	for _, keys := range []int{4, 0} {
		t.Run(map[int]string{4: "same-keys", 0: "new-keys"}[keys], func(t *testing.T) {
			m := newMap(0, 0)
			for i := range held {
				m.Get("idle-" + strconv.Itoa(i))
				k := "live-" + strconv.Itoa(i)
				add(m, k, m.Get(k), 1)
			}
			for i := range cycles {
				k := "new-" + strconv.Itoa(i)
				if keys > 0 {
					k = strconv.Itoa(i % keys)
				}
				require.True(t, refundCycle(m, k))
			}
			assert.Equal(t, 2*held, m.Len(), "no key evicted: the idle ones stay until a Sweep")
			for i := range held {
				_, ok := m.Peek("idle-" + strconv.Itoa(i))
				assert.True(t, ok, "idle-%d evicted", i)
			}
			assert.LessOrEqual(t, len(keyed.Listed(m))-m.Len(), 2*m.Len()+keyed.SweepChunk, "dead nodes listed")
			assertListedAfterSweep(t, m)
		})
	}
}

// TestDeadNodesStayWithinTwiceTheKeysHeld takes and gives back requests
// while many keys are held live, in the patterns that leave the most dead
// nodes listed: refunds on a few keys of their own, on a new key each time,
// and on the held keys themselves, each emptied and taken again at once, so
// that the dead nodes sit deep in the list behind live ones (with a key cap
// that every listed key fills). The dead nodes listed must stay within twice
// the keys held plus a chunk, as the package documentation says, after every
// refund.
func TestDeadNodesStayWithinTwiceTheKeysHeld(t *testing.T) {
	const cycles, held = 3000, 200
	for _, tc := range []struct {
		name               string
		autoSweep, maxKeys int
		refund             string // "own": 4 keys; "new": a new key each time; "held": the held keys
	}{
		{"auto-sweep below/own", 64, 0, "own"},
		{"auto-sweep above/own", 4 * held, 0, "own"},
		{"auto-sweep below/new", 64, 0, "new"},
		{"auto-sweep above/held", 4 * held, 0, "held"},
		{"cap/own", 0, held + 4, "own"},
		{"cap full/held", 0, held, "held"},
		{"neither/held", 0, 0, "held"},
		{"neither/own", 0, 0, "own"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMap(tc.autoSweep, tc.maxKeys)
			for i := range held {
				k := "h" + strconv.Itoa(i)
				add(m, k, m.Get(k), 1)
			}
			most := 0
			for i := range cycles {
				switch tc.refund {
				case "own":
					require.True(t, refundCycle(m, strconv.Itoa(i%4)))
				case "new":
					require.True(t, refundCycle(m, "new-"+strconv.Itoa(i)))
				case "held":
					k := "h" + strconv.Itoa(i%held)
					require.True(t, emptyingRefund(t, m, k, m.Load(k)))
					most = max(most, len(keyed.Listed(m))-m.Len())
					c := m.Get(k)
					require.NotNil(t, c, "cycle %d: the key cap denied %q", i, k)
					add(m, k, c, 1)
				}
				most = max(most, len(keyed.Listed(m))-m.Len())
			}
			assert.Equal(t, held, m.Len(), "the live keys stay held")
			assert.LessOrEqual(t, most, 2*held+keyed.SweepChunk, "dead nodes listed")
			assert.Positive(t, most, "refunds left dead nodes")
		})
	}
}

// TestDropsWalkEvictsAnIdleKeyUnderAStalledCaller: a caller loads the cell of
// a new key, idle, and stalls before its CAS; meanwhile refunds that empty
// another key pay a walk that kills the idle cell and deletes its key. The
// stalled caller's CAS meets the tombstone, and it revives the key: its
// request counts in the cell the key maps to, and the cap's count is the
// keys held. In a map with neither an auto-sweep nor a key cap, the walks
// the refunds pay leave the idle key alone.
func TestDropsWalkEvictsAnIdleKeyUnderAStalledCaller(t *testing.T) {
	for _, tc := range []struct {
		name               string
		autoSweep, maxKeys int
	}{{"auto-sweep", 1 << 10, 0}, {"cap", 0, 8}, {"neither", 0, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			m := newMap(tc.autoSweep, tc.maxKeys)
			stalled := m.Get("a") // the caller's load; its CAS comes later
			walks := 0
			keyed.OnWalk(m, func(int) { walks++ })
			for i := 0; walks == 0 && i < keyed.SweepChunk; i++ {
				require.True(t, refundCycle(m, "k"))
			}
			require.Positive(t, walks, "the refunds paid a walk")
			_, held := m.Peek("a")
			if tc.name == "neither" {
				assert.True(t, held, "a map that evicts only on Sweep kept the idle key")
				assert.Same(t, stalled, add(m, "a", stalled, 1))
				return
			}
			require.False(t, held, "the refund's walk evicted the idle key")
			c := add(m, "a", stalled, 1) // the stalled caller's CAS meets the tombstone
			assert.NotSame(t, stalled, c, "revived")
			got, ok := m.Peek("a")
			require.True(t, ok)
			assert.Same(t, c, got)
			assert.EqualValues(t, 1, c.n.Load(), "the request counts in the cell the key maps to")
			assert.Equal(t, 1, m.Len())
			if tc.maxKeys > 0 {
				assert.EqualValues(t, 1, keyed.Reserved(m))
			}
			assertListedAfterSweep(t, m)
			assertListed(t, m, "a")
		})
	}
}

// TestReviveThatFillsTheCapEvictsNothing: a revival whose re-insertion takes
// the map up to the cap, not over it, has the room it needs, so it evicts no
// idle key. At a cap of 4 with k, a and b live and i idle, an emptying refund
// drops k (3 held); the stalled caller that meets k's tombstone inserts k
// again (4 held): i stays.
func TestReviveThatFillsTheCapEvictsNothing(t *testing.T) {
	const maxKeys = 4
	m, cells := fullOf(maxKeys, []string{"k", "a", "b"}, []string{"i"})
	require.True(t, emptyingRefund(t, m, "k", cells["k"]))
	require.EqualValues(t, maxKeys-1, keyed.Reserved(m))

	revived := add(m, "k", cells["k"], 1) // the stalled caller meets the tombstone
	assert.NotSame(t, cells["k"], revived)
	_, ok := m.Peek("i")
	assert.True(t, ok, "the idle key is kept: the map is at the cap, not over it")
	assert.Equal(t, maxKeys, m.Len())
	assert.EqualValues(t, maxKeys, keyed.Reserved(m))
	assertListedAfterSweep(t, m)
}
