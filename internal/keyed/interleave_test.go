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
	ran := atRevive(m, func() {
		// The walker deletes x, and a new key takes its room.
		require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == x && kill(c) }))
		add(m, "y", m.Get("y"), 1)
	})
	revived := add(m, "x", x, 1)
	require.True(t, ran(), "the deletion ran between the check and the insertion")
	assert.NotSame(t, x, revived)
	assert.Equal(t, maxKeys, m.Len(), "the idle key made room for x")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	_, ok := m.Peek("idle")
	assert.False(t, ok, "the idle key was the one evicted")
	assertBusy(t, m, append(keysUpTo(maxKeys-2), "x", "y")...)
	assertListed(t, m, append(keysUpTo(maxKeys-2), "x", "y")...)
}

// TestOverlappingClaimsLoseNothing forces two walkers to claim overlapping
// chunks: walker A reads a chunk of 32 from head and stalls before moving the
// cursor; walker B claims the first 16, all idle, unlinks them all, the
// cursor's node last, and so moves the cursor back onto head; A's cursor CAS
// then succeeds on the value it read, and A visits B's 16 nodes again (dead,
// unlinked) and 16 more, whose unlinks act on an unlinked node and so leave
// them listed, dead, with the cursor on the last. No live key is lost, Len
// is exact, and the next pass unlinks the dead nodes.
func TestOverlappingClaimsLoseNothing(t *testing.T) {
	m := newMap(0, 0)
	var live, idle []string
	for i := range 10 {
		k := "live-" + strconv.Itoa(i)
		live = append(live, k)
		add(m, k, m.Get(k), 1)
	}
	for i := range 32 {
		k := "idle-" + strconv.Itoa(i)
		idle = append(idle, k)
		m.Get(k)
	}
	claims, deletedByB := 0, -1
	keyed.OnStep(m, func(step string) {
		if step != "claim" {
			return
		}
		claims++
		if claims == 1 { // A has read its chunk
			deletedByB = keyed.Walk(m, 16, 16, false)
		}
	})
	deletedByA := keyed.Walk(m, 32, 32, false)
	assert.Equal(t, 16, deletedByB, "B evicted the 16 newest idle keys")
	assert.Equal(t, 16, deletedByA, "A evicted the other 16, and found B's dead")
	assert.Equal(t, 2, claims, "B claimed once, and A's cursor CAS succeeded on what it read: the claims overlapped")
	assert.Equal(t, len(live), m.Len())
	assert.Empty(t, held(m, idle...))
	assertBusy(t, m, live...)
	listed := keyed.Listed(m)
	assert.Len(t, listed, len(live)+16, "A's unlinks through an unlinked node left its 16 listed, dead")
	for _, k := range live {
		assert.Contains(t, listed, k)
	}
	// The next pass, from the cursor A left on its last node, round the
	// list, unlinks them.
	assert.Zero(t, keyed.Walk(m, 64, 8, false))
	assertListed(t, m, live...)
}

// TestReviveWhoseRoomIsTakenAfterItsWalkKeepsTheCap forces a new key to take
// the room that Revive's walk made, between that walk (which evicts an idle
// key, as the map is at the cap and the revived key is not held) and the
// re-insertion: the re-insertion puts the map over the cap while another key
// is still idle, so Revive evicts it, and the map is back at the cap.
func TestReviveWhoseRoomIsTakenAfterItsWalkKeepsTheCap(t *testing.T) {
	const maxKeys = 8
	m := newMap(0, maxKeys)
	x := m.Get("x") // idle: its caller holds the cell
	for i := range maxKeys - 3 {
		k := strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	m.Get("idle1")
	m.Get("idle2")
	require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == x && kill(c) }), "x evicted under its caller")
	add(m, "full", m.Get("full"), 1)
	require.Equal(t, maxKeys, m.Len(), "the map is at the cap, x not held")
	ran := atRevive(m, func() {
		_, idle1 := m.Peek("idle1")
		_, idle2 := m.Peek("idle2")
		require.NotEqual(t, idle1, idle2, "Revive's walk evicted one idle key")
		add(m, "y", m.Get("y"), 1) // takes the room the walk made
	})
	revived := add(m, "x", x, 1)
	require.True(t, ran(), "the new key took the room between the walk and the re-insertion")
	assert.NotSame(t, x, revived)
	assert.Equal(t, maxKeys, m.Len(), "the other idle key made room for x")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	live := append(keysUpTo(maxKeys-3), "full", "x", "y")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
}

// TestReviveWhoseWalkFindsNoIdleKeyInItsVisitsWalksOn: at the cap, a key
// evicted under its caller is revived while the only idle key lies past the
// MaxVisits nodes that Revive's first walk visits from the cursor. That walk
// evicts nothing, the re-insertion puts the map over the cap, and Revive
// walks on from where the first walk stopped: it reaches the idle key and
// evicts it, and the map is back at the cap. A first walk that evicted
// nothing had stopped Revive from walking again, leaving the map over the
// cap with the idle key held until the next new key's walk.
func TestReviveWhoseWalkFindsNoIdleKeyInItsVisitsWalksOn(t *testing.T) {
	const maxKeys = keyed.MaxVisits + 36
	m, x, busy := atTheCapWithoutX(t, maxKeys, "idle") // idle, the oldest node, last on the list
	listed := keyed.Listed(m)
	require.Equal(t, "idle", listed[len(listed)-1])
	require.Greater(t, len(listed), keyed.MaxVisits+1, "the idle key lies past a walk's visits from head")

	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	revived := add(m, "x", x, 1)
	require.NotEmpty(t, walks)
	assert.Equal(t, keyed.MaxVisits, walks[0], "the first walk visited its whole budget, all busy")
	assert.NotSame(t, x, revived)
	_, ok := m.Peek("idle")
	assert.False(t, ok, "the idle key past the first walk's visits was evicted")
	assert.Equal(t, maxKeys, m.Len(), "the map is back at the cap")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	live := append(busy, "full", "x")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
}

// TestReviveWhoseWalkWentRoundFindingNoIdleKeyWalksOnce: at the cap, with
// no key idle, Revive's first walk goes round the whole list, short of its
// budget, and evicts nothing; it does not walk again after the
// re-insertion, which leaves the map over the cap by the revived key.
func TestReviveWhoseWalkWentRoundFindingNoIdleKeyWalksOnce(t *testing.T) {
	const maxKeys = 8
	m, x, busy := atTheCapWithoutX(t, maxKeys)

	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	add(m, "x", x, 1)
	require.Len(t, walks, 1, "one walk")
	assert.Less(t, walks[0], keyed.MaxVisits, "round the whole list, short of its budget")
	assert.Equal(t, maxKeys+1, m.Len(), "over the cap by the revived key while no key is idle")
	assertListed(t, m, append(busy, "full", "x")...)
}

// TestReviveWhoseWalkWentRoundWithinItsBudgetWalksOnce: at a cap between
// one and two chunks of a walk's budget, with no key idle, Revive's first
// walk starts at head, goes round the whole list and on into it again until
// its budget is spent, evicting nothing. It went round the whole list: a
// second walk would find no idle key either, and Revive does not walk
// again, leaving the map over the cap by the revived key. Counting only a
// walk short of its budget as one that went round, Revive walked the list
// a second time for nothing.
func TestReviveWhoseWalkWentRoundWithinItsBudgetWalksOnce(t *testing.T) {
	const maxKeys = keyed.MaxVisits*2/3 + 1
	m, x, busy := atTheCapWithoutX(t, maxKeys)

	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	add(m, "x", x, 1)
	require.NotEmpty(t, walks)
	assert.Equal(t, keyed.MaxVisits, walks[0], "round the whole list, and on until its budget is spent")
	assert.Len(t, walks, 1, "one walk")
	assert.Equal(t, maxKeys+1, m.Len(), "over the cap by the revived key while no key is idle")
	assertListed(t, m, append(busy, "full", "x")...)
}

// TestRevivalsRacingEachOtherPastTheFirstWalksVisitsKeepTheCap: at the cap,
// keys x and y were evicted under their callers, and the only idle key lies
// past the MaxVisits nodes a walk visits from the cursor. x's Revive walks
// them all, busy, and before its re-insertion y's Revive walks on, evicts
// the idle key and takes its room. x's re-insertion then puts the map over
// the cap while no key is idle: its second walk evicts nothing, and the map
// holds cap + 1 keys, each counted once, every one listed.
func TestRevivalsRacingEachOtherPastTheFirstWalksVisitsKeepTheCap(t *testing.T) {
	const maxKeys = keyed.MaxVisits + 36
	m := newMap(0, maxKeys)
	m.Get("idle") // the oldest node, last on the list
	x, y := m.Get("x"), m.Get("y")
	busy := keysUpTo(maxKeys - 3)
	for _, k := range busy {
		add(m, k, m.Get(k), 1)
	}
	require.Equal(t, 2, m.Sweep(func(c *cell) bool { return (c == x || c == y) && kill(c) }), "x and y evicted under their callers")
	add(m, "full1", m.Get("full1"), 1)
	add(m, "full2", m.Get("full2"), 1)
	require.Equal(t, maxKeys, m.Len(), "the map is at the cap, x and y not held")

	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	ran := atRevive(m, func() {
		_, ok := m.Peek("idle")
		require.True(t, ok, "x's first walk did not reach the idle key")
		add(m, "y", y, 1) // walks on, evicts the idle key, takes its room
		_, ok = m.Peek("idle")
		require.False(t, ok, "y's walk evicted the idle key")
	})
	add(m, "x", x, 1)
	require.True(t, ran(), "y's revival ran between x's walk and its re-insertion")
	assert.Len(t, walks, 3, "x's first walk, y's, and x's second")
	assert.Equal(t, maxKeys+1, m.Len(), "over the cap by x while no key is idle")
	assert.Equal(t, int64(maxKeys+1), keyed.Reserved(m), "count agrees with Len")
	live := append(busy, "full1", "full2", "x", "y")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
	// The next insertion finds no idle key: denied, the cap's excess kept.
	assert.Nil(t, m.Get("new"), "no room, no idle key")
	assert.Equal(t, int64(maxKeys+1), keyed.Reserved(m), "a denied insertion leaks no reservation")
}

// TestReviveRacingASweepPastItsFirstWalksVisitsKeepsTheCap: at the cap, x
// was evicted under its caller, and the only idle key lies past the
// MaxVisits nodes a walk visits from the cursor. x's Revive walks them all,
// busy, and before its re-insertion a Sweep evicts the idle key: the
// re-insertion then takes the room the Sweep made, the map is at the cap,
// not over it, and Revive does not walk again.
func TestReviveRacingASweepPastItsFirstWalksVisitsKeepsTheCap(t *testing.T) {
	const maxKeys = keyed.MaxVisits + 36
	m, x, busy := atTheCapWithoutX(t, maxKeys, "idle") // idle, the oldest node, last on the list

	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	ran := atRevive(m, func() {
		require.Len(t, walks, 1, "x's first walk")
		assert.Equal(t, keyed.MaxVisits, walks[0], "all busy")
		require.Equal(t, 1, m.Sweep(kill), "the Sweep evicts the idle key")
	})
	revived := add(m, "x", x, 1)
	require.True(t, ran(), "the Sweep ran between x's walk and its re-insertion")
	assert.NotSame(t, x, revived)
	assert.Len(t, walks, 1, "no second walk: the map is not over the cap")
	assert.Equal(t, maxKeys, m.Len())
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m), "count agrees with Len")
	live := append(busy, "full", "x")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
}

// atTheCapWithoutX returns a map at its cap of maxKeys keys: the idle keys
// given (oldest first, last on the list), then busy keys 0 … up to the cap
// and a busy key "full" that took the room of x, an idle key evicted under
// its caller, whose cell it also returns.
func atTheCapWithoutX(t *testing.T, maxKeys int, idle ...string) (m *keyed.Map[cell], x *cell, busy []string) {
	t.Helper()
	m = newMap(0, maxKeys)
	x, busy = withoutX(t, m, maxKeys, idle...)
	return m, x, busy
}

// withoutX fills m, an empty map whose cap is maxKeys keys, as
// atTheCapWithoutX says, and returns x's cell and the busy keys.
func withoutX(t *testing.T, m *keyed.Map[cell], maxKeys int, idle ...string) (x *cell, busy []string) {
	t.Helper()
	for _, k := range idle {
		m.Get(k)
	}
	x = m.Get("x") // idle: its caller holds the cell
	busy = keysUpTo(maxKeys - 1 - len(idle))
	for _, k := range busy {
		add(m, k, m.Get(k), 1)
	}
	require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == x && kill(c) }), "x evicted under its caller")
	add(m, "full", m.Get("full"), 1)
	require.Equal(t, maxKeys, m.Len(), "the map is at the cap, x not held")
	return x, busy
}

// assertBusy asserts that each key is held, with a count of 1: every busy
// key kept its cell.
func assertBusy(t *testing.T, m *keyed.Map[cell], keys ...string) {
	t.Helper()
	for _, k := range keys {
		c, ok := m.Peek(k)
		if assert.True(t, ok, k) {
			assert.Equal(t, int64(1), c.n.Load(), k)
		}
	}
}

// atRevive makes f run once, at the next "revive" step: in a Revive, after
// the key cap's check and walk, before the re-insertion. ran reports whether
// f has run.
func atRevive(m *keyed.Map[cell], f func()) (ran func() bool) {
	armed := true
	keyed.OnStep(m, func(step string) {
		if step != "revive" || !armed {
			return
		}
		armed = false
		f()
	})
	return func() bool { return !armed }
}

// TestReviveWhoseRoomIsMadeBeforeItsSecondWalkEvictsNothing forces a Sweep
// that evicts an idle key, and so brings the map back within the cap, after
// Revive's second walk claimed its nodes and before it visits them: the walk
// finds the room made and evicts no other idle key, and the map is at the
// cap, not one key below it.
func TestReviveWhoseRoomIsMadeBeforeItsSecondWalkEvictsNothing(t *testing.T) {
	const maxKeys = 8
	m, x, busy := atTheCapWithoutX(t, maxKeys, "idle1", "idle2", "idle3") // the oldest nodes, last on the list
	idle1, ok := m.Peek("idle1")
	require.True(t, ok)

	revived, swept := false, false
	keyed.OnStep(m, func(step string) {
		switch {
		case step == "revive" && !revived:
			revived = true
			require.Equal(t, []string{"idle1", "idle2"}, held(m, "idle1", "idle2", "idle3"), "the first walk evicted idle3")
			add(m, "y", m.Get("y"), 1) // takes the room the walk made
		case step == "claimed" && revived && !swept:
			swept = true
			require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == idle1 && kill(c) }), "idle1 evicted")
		}
	})
	add(m, "x", x, 1)
	require.True(t, swept, "the Sweep ran in Revive's second walk")
	assert.Equal(t, maxKeys, m.Len(), "at the cap: the Sweep made the room the walk was for")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	assert.Equal(t, []string{"idle2"}, held(m, "idle1", "idle2", "idle3"), "idle2 kept")
	live := append(busy, "full", "x", "y")
	assertBusy(t, m, live...)
	assertListed(t, m, append(live, "idle2")...)
}

// TestReviveWhoseWalkWentRoundEvictingWalksAgain: the map is over the cap by
// an earlier revival, so Revive's first walk goes round the whole list, evicts
// the one idle key, and still finds no room. A key goes idle before the
// re-insertion, which puts the map over the cap again: the walk having
// evicted a key, Revive walks again, evicts the key gone idle, and the map is
// back at the cap. Only a walk that went round evicting nothing tells
// that a second would find no idle key; counting this one as such left the
// map over the cap by one more key, the idle one held.
func TestReviveWhoseWalkWentRoundEvictingWalksAgain(t *testing.T) {
	const maxKeys = 8
	m := newMap(0, maxKeys)
	w, x := m.Get("w"), m.Get("x") // idle: their callers hold the cells
	busy := keysUpTo(maxKeys - 2)
	cells := make([]*cell, len(busy))
	for i, k := range busy {
		cells[i] = add(m, k, m.Get(k), 1)
	}
	require.Equal(t, 2, m.Sweep(func(c *cell) bool { return (c == w || c == x) && kill(c) }), "w and x evicted under their callers")
	add(m, "full1", m.Get("full1"), 1)
	add(m, "full2", m.Get("full2"), 1)
	add(m, "w", w, 1) // no key idle: the map goes over the cap by w
	require.Equal(t, maxKeys+1, m.Len(), "over the cap by the revived w")
	add(m, "0", cells[0], -1) // idle

	ran := atRevive(m, func() {
		_, ok := m.Peek("0")
		require.False(t, ok, "Revive's first walk evicted the idle key")
		require.Equal(t, maxKeys, m.Len(), "and found no room")
		add(m, "1", cells[1], -1) // goes idle before the re-insertion
	})
	var walks []int
	keyed.OnWalk(m, func(v int) { walks = append(walks, v) })
	add(m, "x", x, 1)
	require.True(t, ran())
	require.NotEmpty(t, walks)
	assert.Less(t, walks[0], keyed.MaxVisits, "the first walk went round the whole list, short of its budget")
	assert.Len(t, walks, 2, "a second walk after the re-insertion")
	_, ok := m.Peek("1")
	assert.False(t, ok, "the key gone idle was evicted")
	assert.Equal(t, maxKeys, m.Len(), "back to the cap")
	assert.Equal(t, int64(maxKeys), keyed.Reserved(m))
	live := append(busy[2:], "full1", "full2", "w", "x")
	assertBusy(t, m, live...)
	assertListed(t, m, live...)
}
