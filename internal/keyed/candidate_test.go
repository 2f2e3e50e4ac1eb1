package keyed

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTableCandidateOfADeletedKeyIsAMiss: a deleted key's slot keeps its
// hash under the tombstone; candidate must pass it, as load does, and
// report a miss (so that Find inserts the key), never return the
// tombstone, whose cell is no key's (and whose key, "", is the empty
// key's: Found.Cell would confirm it for "").
func TestTableCandidateOfADeletedKeyIsAMiss(t *testing.T) {
	for _, key := range []string{"", "k"} {
		var tb table[int64]
		tb.init(0)
		n, _ := tinsert(&tb, key)
		require.Same(t, n, tb.candidate(key))
		require.True(t, tdelete(&tb, key))
		assert.Nil(t, tb.candidate(key), "%q deleted", key)
	}
}

// TestTableCandidatePassesAnotherKeysSlot: a key whose probe starts on the
// slot of another key, of another hash, is found past it: candidate
// filters the slots by the key's hash, and returns another key's node only
// on a collision of the full hashes.
func TestTableCandidatePassesAnotherKeysSlot(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	key := shardKeys(&tb, 7, 1)[0]
	other := probeKeys(&tb, 7, key, 1)[0] // in the slot key's probe starts on
	tinsert(&tb, other)
	n, _ := tinsert(&tb, key)
	assert.Same(t, n, tb.candidate(key))
}

// TestTableGrowsPastThreeQuarters: a shard's array is replaced by a bigger
// one only when an insertion would fill more than three quarters of its
// slots (floorSlots and TableBytes count on that threshold), and an
// insertion that reuses a tombstone fills no slot.
func TestTableGrowsPastThreeQuarters(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	keys := shardKeys(&tb, 7, minSlots*3/4+1)
	for _, k := range keys[:minSlots*3/4] {
		tinsert(&tb, k)
	}
	require.Zero(t, tb.growths.Load(), "three quarters of the slots filled")
	require.True(t, tdelete(&tb, keys[0]))
	_, inserted := tinsert(&tb, keys[0]) // into its own tombstone
	require.True(t, inserted)
	require.Zero(t, tb.growths.Load(), "a tombstone reused")
	tinsert(&tb, keys[len(keys)-1])
	assert.Equal(t, int64(1), tb.growths.Load(), "past three quarters")
}

// TestTableShrinksBelowAnEighth: a shard's array is replaced by a smaller
// one only when a deletion leaves fewer than an eighth of its slots in
// nodes.
func TestTableShrinksBelowAnEighth(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	keys := shardKeys(&tb, 7, minSlots*3/4+1)
	for _, k := range keys {
		tinsert(&tb, k)
	}
	require.Equal(t, int64(1), tb.growths.Load(), "grown to twice the slots")
	require.Len(t, *tb.arrays[7].Load(), 2*minSlots)
	for _, k := range keys[2:] {
		require.True(t, tdelete(&tb, k))
	}
	require.Equal(t, int64(1), tb.growths.Load(), "an eighth of the slots held")
	require.True(t, tdelete(&tb, keys[1]))
	assert.Equal(t, int64(2), tb.growths.Load(), "fewer than an eighth")
	assert.Len(t, *tb.arrays[7].Load(), minSlots)
	assert.Same(t, tb.load(keys[0]), tb.candidate(keys[0]))
}

// TestTableRangeSkipsTombstones: the pass over the nodes visits the keys
// held, never a deleted slot's tombstone, which is no key's node.
func TestTableRangeSkipsTombstones(t *testing.T) {
	var tb table[int64]
	tb.init(0)
	keys := shardKeys(&tb, 7, 2)
	for _, k := range keys {
		tinsert(&tb, k)
	}
	require.True(t, tdelete(&tb, keys[0]))
	var seen []string
	tb.rangeNodes(func(n *tnode) { seen = append(seen, n.key()) })
	assert.Equal(t, keys[1:], seen)
}

// TestPow2: the smallest power of two at or above n, n itself when it is
// one.
func TestPow2(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 8: 8, 9: 16, 1 << 20: 1 << 20, 1<<20 + 1: 1 << 21} {
		assert.Equal(t, want, pow2(n), "pow2(%d)", n)
	}
}
