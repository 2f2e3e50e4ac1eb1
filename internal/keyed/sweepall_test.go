package keyed_test

import (
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestSweepAllWhoseFrontNodeIsUnlinkedWalksOnToTheEnd: SweepAll's second
// walk, from the head to the node at the front when it started, meets no
// such node when that node was unlinked meanwhile (here by SweepAll's own
// walk, which killed it): it then walks the whole list, ends there, and
// still visits the cell of the insertion that was under way at the start
// and listed during the first walk; the map is not passed over.
func TestSweepAllWhoseFrontNodeIsUnlinkedWalksOnToTheEnd(t *testing.T) {
	m, stallNew := stalling()
	const busy = keyed.SweepChunk / keyed.StepVisits
	busyKeys(m, busy)
	front := m.Get("front") // idle: the walk kills it, and unlinks it
	c, release, inserted := stallNew(t)
	require.Equal(t, "front", keyed.Listed(m)[0], "front is at the front")
	visits := map[*cell]int{}
	m.SweepAll(func(v *cell) bool {
		if v == front {
			close(release)
			require.Same(t, c, <-inserted, "the insertion listed its cell and returned")
		}
		visits[v]++
		return kill(v)
	})
	assert.Equal(t, 1, visits[front], "front visited once: the second walk did not meet it, it was unlinked")
	assert.Equal(t, 1, visits[c], "the cell listed during the first walk is visited by the second")
	_, held := m.Peek("front")
	assert.False(t, held, "front evicted")
	for i := range busy {
		v, _ := m.Peek("k" + strconv.Itoa(i))
		assert.Equal(t, 2, visits[v], "k%d: each busy cell twice, once in each walk, and no pass over the map", i)
	}
}

// TestInsertionWhoseStepPanicsListsItsCell: an insertion whose auto-sweep
// step panics (here its judge, as a limiter's clock may) between publishing
// its node and listing it still lists the node and counts itself out of the
// insertions under way. Left counted, it made every later SweepAll pass over
// the whole map on top of its walk (a limiter's Sweep some twenty times
// slower), and its cell, never listed, was never evicted by a walk.
func TestInsertionWhoseStepPanicsListsItsCell(t *testing.T) {
	judge, boom := panickyJudge()
	m := keyed.New(nil, judge, hotlimit.Options{AutoSweep: 1})
	const busy = keyed.SweepChunk/keyed.StepVisits + 1
	busyKeys(m, busy)
	boom.Store(true)
	require.PanicsWithValue(t, "judge", func() { m.Get("new") }, "new's insertion pays a step")
	c := assertListedAfterPanic(t, m, "new")
	assert.EqualValues(t, dead, c.n.Load())
	assert.Len(t, keyed.Listed(m), busy, "the busy keys listed, the evicted one unlinked")
}

// TestRevivalWhoseWalkPanicsListsItsCell: a revival at the key cap whose
// second walk (the re-insertion put the map over the cap) panics in its
// judge still lists its fresh cell and counts itself out of the revivals
// under way, as an insertion whose step panics does.
func TestRevivalWhoseWalkPanicsListsItsCell(t *testing.T) {
	const maxKeys = 8
	judge, boom := panickyJudge()
	m := keyed.New(nil, judge, hotlimit.Options{MaxKeys: maxKeys})
	x, busy := withoutX(t, m, maxKeys, "idle")
	ran := atRevive(m, func() {
		_, ok := m.Peek("idle")
		require.False(t, ok, "Revive's first walk evicted the idle key")
		add(m, "y", m.Get("y"), 1) // takes the room the walk made
		boom.Store(true)           // the second walk's judge panics
	})
	require.PanicsWithValue(t, "judge", func() { m.Revive("x", x) }, "the second walk panics")
	require.True(t, ran())
	assert.NotSame(t, x, assertListedAfterPanic(t, m, "x"))
	live := append(busy, "full", "y")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
}

// panickyJudge returns a judge that kills idle cells, and panics with
// "judge" instead, once, when boom is set.
func panickyJudge() (judge func() func(*cell) bool, boom *atomic.Bool) {
	boom = new(atomic.Bool)
	return func() func(*cell) bool {
		if boom.CompareAndSwap(true, false) {
			panic("judge")
		}
		return kill
	}, boom
}

// assertListedAfterPanic asserts that key, whose insertion or revival
// panicked after publishing its idle cell, is held, listed all the same and
// counted out of those under way (a SweepAll walks the list alone), and
// that a walk of the whole list evicts it. It returns key's cell.
func assertListedAfterPanic(t *testing.T, m *keyed.Map[cell], key string) *cell {
	t.Helper()
	c, held := m.Peek(key)
	require.True(t, held, "%s published before the panic", key)
	assert.Contains(t, keyed.Listed(m), key, "listed all the same")
	assert.Zero(t, keyed.Listing(m), "no insertion or revival counted under way")
	assertSweptOnce(t, m)
	assert.Equal(t, 1, keyed.Walk(m, 2*(m.Len()+1), keyed.SweepChunk, false), "a walk evicts the idle cell")
	_, held = m.Peek(key)
	assert.False(t, held, "%s evicted", key)
	return c
}

// TestInsertionThatFindsItsKeyHeldCountsItselfOut: a Get that missed, and
// finds the key held once it publishes (another caller inserted it between
// its load and its publish), counts itself out of the insertions under way
// as it returns the other's cell. Left counted, it made every later SweepAll
// pass over the whole map on top of its walk.
func TestInsertionThatFindsItsKeyHeldCountsItselfOut(t *testing.T) {
	for _, maxKeys := range []int{0, 4} {
		m := newMap(0, maxKeys)
		var other *cell
		armed := false
		keyed.OnStep(m, func(step string) {
			if step == "miss" && armed {
				armed = false
				other = m.Get("k") // between the first Get's load and its publish
			}
		})
		busyKeys(m, 2)
		armed = true
		got := m.Get("k")
		require.NotNil(t, other, "maxKeys %d: the other Get ran at the miss", maxKeys)
		assert.Same(t, other, got, "maxKeys %d: the first Get returns the cell the other inserted", maxKeys)
		assert.Zero(t, keyed.Listing(m), "maxKeys %d: no insertion counted under way", maxKeys)
		assertSweptOnce(t, m)
	}
}

// TestInsertionIsCountedUnderWayBeforeItsCellIsMade: an insertion, a
// key cap's second try after its walk, and a revival each count themselves
// among the insertions under way before their fresh node can be in the map
// (its cell is made as it is put there): counted only after, a SweepAll that
// started between the two would read none under way and walk the list
// alone, never reaching the cell, which was in the map before it started.
func TestInsertionIsCountedUnderWayBeforeItsCellIsMade(t *testing.T) {
	var m *keyed.Map[cell]
	var under []int64 // the insertions under way as each cell is made
	m = keyed.New(func(*cell) { under = append(under, keyed.Listing(m)) }, judge, hotlimit.Options{MaxKeys: 2})
	a := m.Get("a") // idle: its caller holds the cell
	add(m, "b", m.Get("b"), 1)
	assert.Equal(t, []int64{1, 1}, under, "a and b")

	under = nil
	require.NotNil(t, m.Get("c"), "the cap's walk evicted a, and the second try inserted c")
	_, held := m.Peek("a")
	require.False(t, held)
	assert.Equal(t, []int64{1}, under, "c, at the second try")

	under = nil
	require.Equal(t, int64(dead), a.n.Load(), "a evicted under its caller")
	require.NotSame(t, a, m.Revive("a", a))
	assert.Equal(t, []int64{1}, under, "a, revived")
	assert.Zero(t, keyed.Listing(m), "each counted out since")
}

// assertSweptOnce asserts that a SweepAll of nothing judges each cell held
// once: it walks the list and does not pass over the map.
func assertSweptOnce(t *testing.T, m *keyed.Map[cell]) {
	t.Helper()
	visits := map[*cell]int{}
	m.SweepAll(func(v *cell) bool {
		visits[v]++
		return false
	})
	assert.Len(t, visits, m.Len(), "every cell held judged")
	for v, n := range visits {
		assert.Equal(t, 1, n, "cell %p judged once, by the walk: no pass over the map", v)
	}
}

// TestSweepAllReachesACellAboutToBeListed: an insertion, or a revival, that
// has published its fresh cell and is about to list it is still counted as
// under way: a SweepAll at that point visits the cell (by its pass over the
// map) though its walk of the list cannot.
func TestSweepAllReachesACellAboutToBeListed(t *testing.T) {
	for _, path := range []string{"insertion", "revival"} {
		t.Run(path, func(t *testing.T) {
			m := newMap(0, 0)
			for i := range 300 {
				k := "k" + strconv.Itoa(i)
				add(m, k, m.Get(k), 1)
			}
			var old *cell
			if path == "revival" {
				old = m.Get("new")
				require.True(t, kill(old))
			}
			ran := false
			keyed.OnStep(m, func(step string) {
				if step != "push" || ran {
					return
				}
				ran = true
				c, held := m.Peek("new")
				require.True(t, held, "published")
				listed := 300
				if old != nil {
					listed++ // the dead cell's node
				}
				require.Len(t, keyed.Listed(m), listed, "not listed yet")
				visited := 0
				m.SweepAll(func(v *cell) bool {
					if v == c {
						visited++
					}
					return false
				})
				assert.Equal(t, 1, visited, "SweepAll reaches the cell about to be listed")
			})
			if path == "revival" {
				m.Revive("new", old)
			} else {
				m.Get("new")
			}
			require.True(t, ran, "the %s listed its cell", path)
		})
	}
}

// TestSweepAllReachesACellAboutToBeListedWhileOthersComeAndGo: an insertion
// that has published its fresh cell and is about to list it stays counted
// on the stripe it picked until it has listed it, whatever other insertions
// do meanwhile. Here SweepAll's first reading has read each stripe before
// that one zero when, before it reads that one, an insertion comes and goes
// on each of the stripes already read. Were an insertion to take its one off
// another stripe than the one it added it to (the next one, say), the last
// of them would take it off the stripe of the insertion under way: the
// reading would find every stripe zero, and SweepAll, walking the list
// alone, would never judge the cell.
func TestSweepAllReachesACellAboutToBeListedWhileOthersComeAndGo(t *testing.T) {
	for range 100 { // until the insertion picks a stripe read after another
		m := newMap(0, 0)
		stripe, reads, judged := -1, 0, 0
		swept := false
		keyed.OnStep(m, func(step string) {
			switch {
			case step == "push" && stripe < 0:
				c, held := m.Peek("new")
				require.True(t, held, "published")
				require.Empty(t, keyed.Listed(m), "not listed yet")
				counts := keyed.Stripes(m)
				stripe = slices.Index(counts, 1)
				require.GreaterOrEqual(t, stripe, 0, "the insertion counted in: %v", counts)
				counts[stripe] = 0
				require.Equal(t, make([]int64, len(counts)), counts, "no other")
				if stripe == 0 {
					return // read first: no insertion can come and go on a stripe read before it
				}
				swept = true
				m.SweepAll(func(v *cell) bool {
					if v == c {
						judged++
					}
					return false
				})
			case step == "stripe" && swept:
				if reads++; reads == stripe { // stripes 0 to stripe-1 read zero
					for s := range stripe {
						keyed.CountOut(m, keyed.CountIn(m, s))
					}
				}
			}
		})
		m.Get("new")
		if !swept {
			continue
		}
		require.GreaterOrEqual(t, reads, stripe, "the reading stood before the insertion's stripe")
		assert.Equal(t, 1, judged, "SweepAll judged the cell about to be listed (stripe %d)", stripe)
		assert.Zero(t, keyed.Listing(m), "every insertion counted out")
		return
	}
	t.Fatal("every insertion picked the first stripe")
}
