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

// TestSweepMapReachesACellNotYetListed: an insertion that pays an
// auto-sweep step publishes its cell in the map, then runs the step, then
// lists it. Stalled in the step, the cell is held (other callers load it)
// but not listed: Sweep misses it, SweepMap visits it, and deletes it when
// killed.
func TestSweepMapReachesACellNotYetListed(t *testing.T) {
	m, during := beforeAStep()
	ran := false
	*during = func() {
		ran = true
		c, held := m.Peek("new")
		require.True(t, held, "published before the step")
		assert.False(t, slices.Contains(keyed.Listed(m), "new"), "listed only after the step")
		visited := false
		m.Sweep(func(v *cell) bool { visited = visited || v == c; return false })
		assert.False(t, visited, "Sweep walks the list only")
		assert.Equal(t, 1, m.SweepMap(func(v *cell) bool { return v == c && kill(v) }), "SweepMap reaches the cell, kills and deletes it")
		_, held = m.Peek("new")
		assert.False(t, held)
	}
	m.Get("new")
	require.True(t, ran, "the insertion of new paid a step")
	assert.Equal(t, 0, m.SweepMap(kill), "every cell left is busy")
}

// TestSweepAllReachesACellNotYetListed: SweepAll, like SweepMap, visits the
// cell of an insertion stalled between publishing and listing it, and that
// of a revival stalled in the key cap's walk it makes before listing its
// fresh cell; and with neither under way it visits each cell once, in its
// walk of the list.
func TestSweepAllReachesACellNotYetListed(t *testing.T) {
	t.Run("insertion", func(t *testing.T) {
		m, during := beforeAStep()
		ran := false
		*during = func() {
			ran = true
			c, held := m.Peek("new")
			require.True(t, held, "published before the step")
			require.False(t, slices.Contains(keyed.Listed(m), "new"), "listed only after the step")
			visits := 0
			assert.Equal(t, 1, m.SweepAll(func(v *cell) bool {
				if v == c {
					visits++
				}
				return v == c && kill(v)
			}), "SweepAll reaches the cell, kills and deletes it")
			assert.Equal(t, 1, visits)
		}
		m.Get("new")
		require.True(t, ran, "the insertion of new paid a step")
	})
	t.Run("revival", func(t *testing.T) {
		const busy = keyed.MaxVisits + 1 // the revival's first walk visits its budget and evicts none
		judged := 0
		var during func()
		m := keyed.New(nil, func() func(*cell) bool {
			if judged++; judged == 2 && during != nil { // the walk after the re-insertion
				during()
			}
			return kill
		}, hotlimit.Options{MaxKeys: busy + 1})
		for i := range busy {
			k := "b" + strconv.Itoa(i)
			add(m, k, m.Get(k), 1)
		}
		old := m.Get("a")
		require.True(t, kill(old))
		require.True(t, m.Drop("a", old))
		add(m, "x", m.Get("x"), 1) // takes the room a's drop left
		ran := false
		during = func() {
			ran = true
			c, held := m.Peek("a")
			require.True(t, held, "re-inserted before the walk")
			require.False(t, slices.Contains(keyed.Listed(m), "a"), "listed only after the walk")
			visited := false
			assert.Equal(t, 1, m.SweepAll(func(v *cell) bool { visited = visited || v == c; return v == c && kill(v) }))
			assert.True(t, visited, "SweepAll reaches the revived cell")
		}
		m.Revive("a", old)
		require.True(t, ran, "the revival walked after its re-insertion")
	})
	t.Run("quiet", func(t *testing.T) {
		// Insertions, revivals (one over the cap), and an insertion the
		// cap turns away have all ended: none is counted as under way.
		const keys = 1000
		m := newMap(0, keys)
		for i := range keys {
			k := "k" + strconv.Itoa(i)
			add(m, k, m.Get(k), 1)
		}
		for i := range 10 {
			k := "k" + strconv.Itoa(i)
			c := m.Get(k)
			add(m, k, c, -1)
			require.True(t, kill(c))
			require.True(t, m.Drop(k, c))
			add(m, k, c, 1) // revives the key
		}
		require.Nil(t, m.Get("over"), "the cap is reached and every key busy")
		old := m.Get("k0")
		add(m, "k0", old, -1)
		require.True(t, kill(old))
		require.True(t, m.Drop("k0", old))
		add(m, "x", m.Get("x"), 1) // takes the room
		add(m, "k0", old, 1)       // revives k0 over the cap
		require.Equal(t, keys+1, m.Len())
		listed := len(keyed.Listed(m)) // the keys held, and the dropped cells' dead nodes
		visits := 0
		assert.Zero(t, m.SweepAll(func(c *cell) bool { visits++; return kill(c) }))
		assert.Equal(t, listed, visits, "each listed cell once, and no pass over the map")
	})
}

// TestSweepMapVisitsEveryKeyHeldWhileTheTableGrows: SweepMap's pass over
// the map reaches every key held throughout it, once, though insertions
// made during it grow the table's arrays several times over (the pass walks
// the array of each shard it loaded, which a replacement copies and leaves
// as it was).
func TestSweepMapVisitsEveryKeyHeldWhileTheTableGrows(t *testing.T) {
	m := newMap(0, 0)
	const held, grown = 1000, 20000
	cells := make(map[*cell]string, held)
	for i := range held {
		k := "k" + strconv.Itoa(i)
		cells[add(m, k, m.Get(k), 1)] = k
	}
	grow, grew := make(chan struct{}), make(chan struct{})
	go func() {
		<-grow
		for i := range grown {
			m.Get("g" + strconv.Itoa(i))
		}
		close(grew)
	}()
	visits := make(map[*cell]int, held)
	first := true
	before := keyed.Growths(m)
	m.SweepMap(func(c *cell) bool {
		if first {
			first = false
			close(grow)
			<-grew // the insertions are done, under the pass
		}
		visits[c]++
		return false
	})
	require.Equal(t, held+grown, m.Len())
	require.Greater(t, keyed.Growths(m), before+2, "the table grew under the pass, several times")
	for c, k := range cells {
		assert.Equal(t, 1, visits[c], "key %s visited once", k)
	}
}

// TestSweepAllSkipsTheMapForAnInsertionListedDuringItsWalk: an insertion
// under way when SweepAll starts (stalled in its auto-sweep step, its cell
// published, not listed) that lists its cell before SweepAll's walk of the
// list ends costs no pass over the map: SweepAll walks again from the head
// to where its walk started, and visits the cell there.
func TestSweepAllSkipsTheMapForAnInsertionListedDuringItsWalk(t *testing.T) {
	m, stallNew := stalling()
	const keys = keyed.SweepChunk/keyed.StepVisits + 1
	busyKeys(m, keys)
	c, release, inserted := stallNew(t)
	require.False(t, slices.Contains(keyed.Listed(m), "new"), "not listed yet")
	visits := map[*cell]int{}
	first := true
	m.SweepAll(func(v *cell) bool {
		if first {
			first = false
			close(release)
			require.Same(t, c, <-inserted, "the insertion listed its cell and returned")
		}
		visits[v]++
		return kill(v)
	})
	assert.Equal(t, 1, visits[c], "the cell listed during the walk is visited")
	assert.Len(t, visits, keys+1)
	total := 0
	for _, n := range visits {
		total += n
	}
	assert.Equal(t, keys+1, total, "each cell once: no pass over the map")
}

// TestSweepAllLooksAgainDuringItsWalk: an insertion under way when SweepAll
// starts lists its cell early in the walk, and another one, stalled like
// the first, starts later in it and is still under way at its end: a
// reading of listing between the two, during the walk, spares the pass over
// the map, and the first insertion's cell is still visited.
func TestSweepAllLooksAgainDuringItsWalk(t *testing.T) {
	var stall atomic.Pointer[chan struct{}] // closed by the step that stalls, which waits for release
	var release chan struct{}
	m := keyed.New(nil, func() func(*cell) bool {
		if p := stall.Swap(nil); p != nil {
			close(*p)
			<-release
		}
		return kill
	}, hotlimit.Options{AutoSweep: 1})
	const keys = 3 * 256
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	// stalled inserts keys named prefix0, prefix1, … until one stalls in
	// its auto-sweep step; it returns once that one is published and
	// stalled, and done is closed once it is listed.
	stalled := func(prefix string) (key string, done chan struct{}) {
		ch, keyc := make(chan struct{}), make(chan string, 1)
		done = make(chan struct{})
		release = make(chan struct{})
		stall.Store(&ch)
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				k := prefix + strconv.Itoa(i)
				keyc <- k
				m.Get(k)
				select {
				case <-ch:
					return
				default:
					<-keyc
				}
			}
		}()
		<-ch
		return <-keyc, done
	}
	keyA, doneA := stalled("a")
	releaseA := release
	cA, held := m.Peek(keyA)
	require.True(t, held)
	visits := map[*cell]int{}
	var releaseB chan struct{}
	var doneB chan struct{}
	n := 0
	m.SweepAll(func(v *cell) bool {
		switch n++; n {
		case 10: // A lists its cell, and no insertion is under way
			close(releaseA)
			<-doneA
		case 300: // past a reading of listing: B stalls, under way to the end
			_, doneB = stalled("b")
			releaseB = release
		}
		visits[v]++
		return false
	})
	require.NotNil(t, releaseB, "the walk reached B's start")
	close(releaseB)
	<-doneB
	assert.Equal(t, 1, visits[cA], "A's cell, listed during the walk, is visited")
	total := 0
	for _, c := range visits {
		total += c
	}
	assert.Less(t, total, keys+keys/2, "no pass over the map: %d visits of %d keys", total, m.Len())
}

// busyKeys inserts the keys k0 … k(n−1), each with a count of 1.
func busyKeys(m *keyed.Map[cell], n int) {
	for i := range n {
		k := "k" + strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
}

// beforeAStep returns an auto-sweeping map whose next insertion pays a walk
// that judges, and a function its judge runs once, at that walk, when set.
func beforeAStep() (m *keyed.Map[cell], during *func()) {
	during = new(func())
	m = keyed.New(nil, func() func(*cell) bool {
		if f := *during; f != nil {
			*during = nil
			f()
		}
		return kill
	}, hotlimit.Options{AutoSweep: 1})
	// The insertions after the first, into a map at the threshold, owe the
	// walks keyed.StepVisits visits each: ten of them owe 30, and the next
	// completes a chunk of 32. The keys are busy: the walks evict none.
	busyKeys(m, keyed.SweepChunk/keyed.StepVisits+1)
	return m, during
}

// stalling returns an auto-sweeping map (AutoSweep 1), and stallNew, which
// inserts the key "new" with a count of 1 from another goroutine and returns
// once its cell is published and its insertion stalled in the auto-sweep step
// it pays (the map must hold enough keys for it to pay one). It returns that
// cell, release, which lets the insertion go on when closed, and inserted,
// which receives the cell once the insertion has listed it and returned.
func stalling() (m *keyed.Map[cell], stallNew func(t *testing.T) (c *cell, release chan<- struct{}, inserted <-chan *cell)) {
	var stall atomic.Bool
	stalled, released := make(chan struct{}), make(chan struct{})
	m = keyed.New(nil, func() func(*cell) bool {
		if stall.CompareAndSwap(true, false) {
			close(stalled)
			<-released
		}
		return kill
	}, hotlimit.Options{AutoSweep: 1})
	return m, func(t *testing.T) (*cell, chan<- struct{}, <-chan *cell) {
		t.Helper()
		stall.Store(true)
		done := make(chan *cell)
		go func() { done <- add(m, "new", m.Get("new"), 1) }()
		<-stalled // new is published, and its insertion stalled in its step
		c, held := m.Peek("new")
		require.True(t, held, "new is published")
		return c, released, done
	}
}
