package keyed_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSweepMapVisitsEveryCell: SweepMap judges every cell in the map, not
// only the first the map hands it, and deletes each it kills, leaving the
// busy ones mapped. A sweep that stopped early would leave the cells it
// never judged (those not yet on the sweep list among them) unjudged, as
// Sweep does.
func TestSweepMapVisitsEveryCell(t *testing.T) {
	const keys = 50
	m := newMap(0, 0)
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		if i%2 == 1 {
			add(m, k, m.Get(k), 1) // busy
		} else {
			m.Get(k) // idle
		}
	}
	require.Equal(t, keys, m.Len())
	judged := 0
	deleted := m.SweepMap(func(c *cell) bool { judged++; return kill(c) })
	assert.Equal(t, keys, judged, "every cell is judged")
	assert.Equal(t, keys/2, deleted, "every idle cell is deleted")
	assert.Equal(t, keys/2, m.Len())
	for i := range keys {
		_, held := m.Peek("k" + strconv.Itoa(i))
		assert.Equal(t, i%2 == 1, held, "key %d", i)
	}
}
