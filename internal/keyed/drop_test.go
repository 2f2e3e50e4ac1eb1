package keyed_test

import (
	"strconv"
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
