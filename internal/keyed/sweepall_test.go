package keyed_test

import (
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

// TestSweepAllReachesACellWhoseInsertionPanicked: an insertion that panics
// between publishing its node and listing it (here its auto-sweep step's
// judge panics) leaves its cell in the map, never listed, and still counted
// as under way. That count is what keeps every later SweepAll reaching the
// cell, by a pass over the map: were it taken off, the walks would never
// visit it, and a limiter's sweep would leave its word unjudged.
func TestSweepAllReachesACellWhoseInsertionPanicked(t *testing.T) {
	var boom atomic.Bool
	m := keyed.New(nil, func() func(*cell) bool {
		if boom.CompareAndSwap(true, false) {
			panic("judge")
		}
		return kill
	}, hotlimit.Options{AutoSweep: 1})
	busyKeys(m, keyed.SweepChunk/keyed.StepVisits+1)
	boom.Store(true)
	require.PanicsWithValue(t, "judge", func() { m.Get("new") }, "new's insertion pays a step")
	c, held := m.Peek("new")
	require.True(t, held, "published before the step")
	require.NotContains(t, keyed.Listed(m), "new", "never listed")
	for i := range 2 {
		visited := 0
		m.SweepAll(func(v *cell) bool {
			if v == c {
				visited++
			}
			return false
		})
		assert.Equal(t, 1, visited, "SweepAll %d reaches the unlisted cell", i)
	}
	assert.Equal(t, 1, m.SweepAll(func(v *cell) bool { return v == c && kill(v) }), "and deletes it when killed")
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
