package keyed_test

import (
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
