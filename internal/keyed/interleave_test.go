package keyed_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestPushAfterAClaimFromHeadLeavesTheClaimToItsWalker forces a push at the
// front of the list between a walker's claim of the first chunk (from head)
// and its first visit: the walker visits the nodes it claimed, the last one
// (where it leaves the cursor) included, and not the node pushed since.
// Read from head again, the chunk would start on the new node, whose fresh
// cell the walker would evict under the caller that just inserted it, and
// end one node short of the cursor, which the pass would then skip.
func TestPushAfterAClaimFromHeadLeavesTheClaimToItsWalker(t *testing.T) {
	// Keys 0 … 49, live but 18, listed newest first: the auto-sweep's first
	// walk, paid by the 11th insertion at the threshold (3 visits each, a
	// chunk of 32), claims 49 … 18 from head.
	const threshold = 40
	m := newMap(threshold, 0)
	for i := range 50 {
		k := strconv.Itoa(i)
		c := m.Get(k)
		if i != 18 {
			add(m, k, c, 1)
		}
	}
	require.Equal(t, 50, m.Len(), "no walk yet: the debt is 30 visits")
	armed := true
	var claims int
	keyed.OnStep(m, func(step string) {
		if step != "claimed" {
			return
		}
		claims++
		if armed {
			armed = false
			m.Get("pushed") // idle and fresh; its step adds 3 visits, no walk
		}
	})
	visits := 0
	keyed.OnWalk(m, func(v int) { visits += v })
	add(m, "50", m.Get("50"), 1) // pays the walk, before its own insertion
	require.False(t, armed, "the push ran between the claim and the visits")
	require.Equal(t, 1, claims, "one claim of a whole chunk")
	assert.Equal(t, keyed.SweepChunk, visits)
	_, ok := m.Peek("18")
	assert.False(t, ok, "18, idle, the last node claimed, was visited and evicted")
	_, ok = m.Peek("pushed")
	assert.True(t, ok, "the key pushed after the claim was left to the next pass")
	for i := range 51 {
		if i == 18 {
			continue
		}
		c, ok := m.Peek(strconv.Itoa(i))
		if assert.True(t, ok, "live key %d held", i) {
			assert.Equal(t, int64(1), c.n.Load(), "live key %d kept its cell", i)
		}
	}
	keys := append(keysUpTo(51), "pushed")
	assertListed(t, m, held(m, keys...)...)
}

// TestReviveOfAKeyDeletedAfterItsCheckKeepsTheCap forces the deletion of a
// key between Revive's key cap check, which finds the key held (by the dead
// cell, killed by a walker that has not deleted it yet), and its
// re-insertion, while another key takes the room the deletion made: the
// re-insertion puts the map over the cap, so Revive evicts an idle key, and
// the map is back at the cap.
func TestReviveOfAKeyDeletedAfterItsCheckKeepsTheCap(t *testing.T) {
	const maxKeys = 8
	m := newMap(0, maxKeys)
	x := m.Get("x") // idle: its caller holds the cell
	m.Get("idle")
	for i := range maxKeys - 2 {
		k := strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	require.Equal(t, maxKeys, m.Len())
	require.True(t, kill(x), "a walker killed x, and stalls before deleting it")
	armed := true
	keyed.OnStep(m, func(step string) {
		if step != "revive" || !armed {
			return
		}
		armed = false
		// The walker deletes x, and a new key takes its room.
		require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == x && kill(c) }))
		add(m, "y", m.Get("y"), 1)
	})
	revived := add(m, "x", x, 1)
	require.False(t, armed, "the deletion ran between the check and the insertion")
	assert.NotSame(t, x, revived)
	assert.Equal(t, maxKeys, m.Len(), "the idle key made room for x")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	_, ok := m.Peek("idle")
	assert.False(t, ok, "the idle key was the one evicted")
	for _, k := range append(keysUpTo(maxKeys-2), "x", "y") {
		c, ok := m.Peek(k)
		if assert.True(t, ok, k) {
			assert.Equal(t, int64(1), c.n.Load(), k)
		}
	}
	assertListed(t, m, append(keysUpTo(maxKeys-2), "x", "y")...)
}
