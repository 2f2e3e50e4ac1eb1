package keyed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestFindConfirmsTheKeyInCell: Find locates a node by its key's hash
// alone; Cell returns the cell only when the node is the key's. A node of
// another key under the key's hash (a collision) comes back from Find, and
// Cell refuses it; Get then finds or inserts the key's own cell, which the
// other key's node does not hide.
func TestFindConfirmsTheKeyInCell(t *testing.T) {
	m := keyed.New[int64](nil, neverIdle, hotlimit.Options{})
	other := keyed.Collide(m, "k", "other")
	require.NotNil(t, other)
	f := m.Find("k")
	require.False(t, f.Full())
	assert.Nil(t, f.Cell("k"), "another key's node is not k's cell")
	assert.Same(t, other, f.Cell("other"), "Find found the node under k's hash")
	own := m.Get("k")
	require.NotNil(t, own)
	assert.NotSame(t, other, own)
	assert.Same(t, own, m.Get("k"), "Get finds k past the other key's node")
	assert.Same(t, own, m.Load("k"))
	assert.Nil(t, m.Find("k").Cell("k"), "the other key's node still comes first")
	assert.Nil(t, keyed.Collide(m, "k", "third"), "k is held")
}

// TestFindInsertsOnAMiss: Find of a key not held inserts it, as Get does,
// and Cell returns the new cell; Find of a held key finds its cell.
func TestFindInsertsOnAMiss(t *testing.T) {
	m := keyed.New[int64](nil, neverIdle, hotlimit.Options{})
	f := m.Find("a")
	require.False(t, f.Full())
	c := f.Cell("a")
	require.NotNil(t, c)
	assert.Equal(t, 1, m.Len())
	assert.Same(t, c, m.Load("a"))
	assert.Same(t, c, m.Find("a").Cell("a"))
	assert.Equal(t, []string{"a"}, keyed.Listed(m), "the insertion listed its node")
}

// TestFindFullUnderTheKeyCap: with the cap reached and no key idle, Find of
// a new key inserts nothing and reports Full, as Get returns nil; Cell is
// then nil too.
func TestFindFullUnderTheKeyCap(t *testing.T) {
	m := keyed.New[int64](nil, neverIdle, hotlimit.Options{MaxKeys: 1})
	require.NotNil(t, m.Find("a").Cell("a"))
	f := m.Find("b")
	assert.True(t, f.Full())
	assert.Nil(t, f.Cell("b"))
	assert.Nil(t, m.Load("b"))
	assert.Equal(t, 1, m.Len())
}

// neverIdle is a judge whose kill function finds no cell idle.
func neverIdle() func(*int64) bool { return func(*int64) bool { return false } }

// TestCellOfAKeyDeletedSinceFindIsItsDeadCell: k is swept between Find and
// Cell, and its slot, a tombstone first on k's probe, is reused by another
// key's node of k's hash. Cell still returns the node Find read, k's dead
// cell, as Load would have (the caller revives it), never nil nor the other
// key's cell; a new Find meets the other key's node, and Get inserts a
// fresh cell past it.
func TestCellOfAKeyDeletedSinceFindIsItsDeadCell(t *testing.T) {
	m := newMap(0, 0)
	c := m.Get("k") // fresh: idle
	f := m.Find("k")
	require.Equal(t, 1, m.Sweep(kill), "k swept after Find")
	other := keyed.Collide(m, "k", "other")
	require.NotNil(t, other, "k is not held: its slot is reused")
	got := f.Cell("k")
	require.Same(t, c, got, "the node Find read, k's own")
	assert.Equal(t, int64(dead), got.n.Load(), "dead: the caller revives it")
	assert.Nil(t, m.Find("k").Cell("k"), "the other key's node now comes first")
	fresh := m.Get("k")
	assert.NotSame(t, c, fresh)
	assert.NotSame(t, other, fresh)
	assert.Zero(t, fresh.n.Load())
}
