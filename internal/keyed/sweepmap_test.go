package keyed_test

import (
	"slices"
	"strconv"
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
	var during func()
	m := keyed.New(nil, func() func(*cell) bool {
		if f := during; f != nil {
			during = nil
			f()
		}
		return kill
	}, hotlimit.Options{AutoSweep: 1})
	// The insertions after the first, into a map at the threshold, owe the
	// walks keyed.StepVisits visits each: ten of them owe 30, and the next
	// completes a chunk of 32. The keys are busy: the walks evict none.
	for i := range keyed.SweepChunk/keyed.StepVisits + 1 {
		k := "k" + strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	ran := false
	during = func() {
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
		var during func()
		m := keyed.New(nil, func() func(*cell) bool {
			if f := during; f != nil {
				during = nil
				f()
			}
			return kill
		}, hotlimit.Options{AutoSweep: 1})
		for i := range keyed.SweepChunk/keyed.StepVisits + 1 {
			k := "k" + strconv.Itoa(i)
			add(m, k, m.Get(k), 1)
		}
		ran := false
		during = func() {
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
		m := newMap(0, 0)
		for i := range 1000 {
			k := "k" + strconv.Itoa(i)
			add(m, k, m.Get(k), 1)
		}
		visits := 0
		assert.Zero(t, m.SweepAll(func(c *cell) bool { visits++; return kill(c) }))
		assert.Equal(t, 1000, visits, "each cell once")
	})
}
