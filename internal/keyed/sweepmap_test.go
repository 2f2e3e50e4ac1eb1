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
