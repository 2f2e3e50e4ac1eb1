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

// TestMaxKeysFindsAnIdleKeyAnywhere fills a capped map with live keys but
// one idle key, at each position of the list in turn, and inserts new keys
// while the list stays as it is (every insertion is denied until one finds
// the idle key): the walks of the cap visit every node, so the idle key is
// evicted within the insertions that visit the whole list once, wherever it
// stands, the cursor's stops included.
func TestMaxKeysFindsAnIdleKeyAnywhere(t *testing.T) {
	for _, maxKeys := range []int{16, 100} {
		attempts := (maxKeys + keyed.MaxVisits - 1) / keyed.MaxVisits
		for idle := range maxKeys {
			m := newMap(0, maxKeys)
			for i := range maxKeys {
				k := strconv.Itoa(i)
				if i == idle {
					m.Get(k)
				} else {
					add(m, k, m.Get(k), 1)
				}
			}
			got := 0
			for range attempts {
				if m.Get("new") != nil {
					got++
					break
				}
			}
			require.Equal(t, 1, got, "cap %d: the idle key %d, listed %d from the front, is found in %d insertions", maxKeys, idle, maxKeys-idle, attempts)
			_, ok := m.Peek(strconv.Itoa(idle))
			assert.False(t, ok, "the idle key was evicted")
			assert.Equal(t, maxKeys, m.Len())
		}
	}
}

// capped returns a capped map of keys 0 … maxKeys−1, listed newest first, all
// live (a count of one) but those in idle, with their cells; judge is the
// map's judge, and may be changed by the test.
func capped(maxKeys int, judge *func() func(*cell) bool, idle ...int) (*keyed.Map[cell], []*cell) {
	*judge = func() func(*cell) bool { return kill }
	m := keyed.New(nil, func() func(*cell) bool { return (*judge)() }, hotlimit.Options{MaxKeys: maxKeys})
	cells := make([]*cell, maxKeys)
	for i := range maxKeys {
		k := strconv.Itoa(i)
		cells[i] = m.Get(k)
		if !slices.Contains(idle, i) {
			add(m, k, cells[i], 1)
		}
	}
	return m, cells
}

// held returns the keys a map holds, from the candidates given.
func held(m *keyed.Map[cell], candidates ...string) []string {
	var keys []string
	for _, k := range candidates {
		if _, ok := m.Peek(k); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestSweepUnlinkingTheCursorNodeKeepsThePass forces a Sweep to unlink the
// node the key cap's cursor stands on, between two walks: the cursor moves
// back onto the node before it, so the next walk resumes the pass there,
// visiting no node twice, and its unlink takes effect (the list holds the
// keys held, no dead node).
func TestSweepUnlinkingTheCursorNodeKeepsThePass(t *testing.T) {
	var judge func() func(*cell) bool
	m, cells := capped(12, &judge, 11) // listed 11 (idle), 10, …, 0
	visits := 0
	keyed.OnWalk(m, func(v int) { visits = v })
	require.NotNil(t, m.Get("n1"), "11 evicted") // claims 11 … 4: the cursor stands on 4
	add(m, "n1", m.Get("n1"), 1)
	add(m, "4", cells[4], -1)
	add(m, "3", cells[3], -1)
	require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == cells[4] && kill(c) }), "the Sweep unlinked 4, the cursor's node")
	add(m, "n2", m.Get("n2"), 1) // a free key: no walk
	visits = 0
	require.NotNil(t, m.Get("n3"), "3 evicted")
	assert.Equal(t, 1, visits, "the walk resumed after 5, where the cursor moved back: 3 is its first visit")
	_, ok := m.Peek("3")
	assert.False(t, ok)
	keys := []string{"n1", "n2", "n3"}
	for i := range 12 {
		keys = append(keys, strconv.Itoa(i))
	}
	assertListed(t, m, held(m, keys...)...)
	assert.Equal(t, int64(m.Len()), keyed.Reserved(m))
}

// TestCapWalkFindingRoomAtItsStartClaimsNothing: a key cap's walk that
// finds the map with room before it claims (a Sweep made it after the
// insertion found none) leaves the cursor where it stood, so the next walk
// visits the nodes after it first. Claiming a chunk and visiting none of it
// passed over those nodes for the whole pass: an idle key there stayed held
// while the next walks spent their visits on the rest of the list.
func TestCapWalkFindingRoomAtItsStartClaimsNothing(t *testing.T) {
	var judge func() func(*cell) bool
	m, cells := capped(12, &judge, 11, 5) // listed 11 (idle), 10, …, 5 (idle), …, 0
	require.Equal(t, 1, m.Sweep(func(c *cell) bool { return c == cells[5] && kill(c) }), "a Sweep made room")
	visits := -1
	keyed.OnWalk(m, func(v int) { visits = v })
	assert.Zero(t, keyed.Walk(m, keyed.MaxVisits, 4, true), "the walk finds room and evicts nothing")
	assert.Zero(t, visits, "nor visits a node")
	add(m, "n1", m.Get("n1"), 1) // takes the room: no walk
	visits = -1
	require.NotNil(t, m.Get("n2"), "11 evicted")
	assert.Equal(t, 2, visits, "the walk started at the front, where the cursor stood: n1, pushed since, then 11")
	_, ok := m.Peek("11")
	assert.False(t, ok)
	assert.Equal(t, int64(12), keyed.Reserved(m))
}

// TestWalkerUnlinkingItsLastNodeAfterTheNextClaim forces a walker's unlink of
// the last node it claimed, the cursor's, after the next walker claimed from
// that node and unlinked the node after it: the first walker's kill of its
// last node runs the second walk. The first unlink then links the dead node
// the second walker unlinked again (it read the next before), as two
// neighbours' unlinks may; no live key is lost, and the next pass of the
// walks unlinks the dead node.
func TestWalkerUnlinkingItsLastNodeAfterTheNextClaim(t *testing.T) {
	var judge func() func(*cell) bool
	m, cells := capped(20, &judge, 12, 11) // listed 19, …, 12 (idle, the first claim's last), 11 (idle), …
	armed := true
	judge = func() func(*cell) bool {
		return func(c *cell) bool {
			if c == cells[12] && armed {
				armed = false
				require.NotNil(t, m.Get("y"), "the second walker evicted 11")
			}
			return kill(c)
		}
	}
	require.NotNil(t, m.Get("x"), "the first walker evicted 12")
	require.False(t, armed)
	add(m, "x", m.Get("x"), 1)
	add(m, "y", m.Get("y"), 1)
	keys := []string{"x", "y"}
	for i := range 20 {
		keys = append(keys, strconv.Itoa(i))
	}
	live := held(m, keys...)
	assert.Len(t, live, 20)
	assert.NotContains(t, live, "12")
	assert.NotContains(t, live, "11")
	listed := keyed.Listed(m)
	assert.Contains(t, listed, "11", "the first unlink linked 11 again, dead")
	for _, k := range live {
		assert.Contains(t, listed, k, "live key %s listed", k)
	}
	assert.Equal(t, int64(20), keyed.Reserved(m))
	// The next pass: no key is idle, so a new key is denied after a walk
	// round the list, which unlinks 11.
	assert.Nil(t, m.Get("z"))
	assertListed(t, m, live...)
	assert.Equal(t, int64(20), keyed.Reserved(m))
}

// TestReservedCountMatchesKeysHeld forces each path that changes the key
// cap's count and checks that it still equals the keys held: an insertion
// that loses its key to a concurrent one (its judge, called by the
// auto-sweep step between the reservation and the insertion, inserts the
// same key first), an eviction, a Revive that replaces a dead cell between
// the kill and the deletion, a Revive of a deleted key (past the cap), a
// denied key, and a Sweep.
func TestReservedCountMatchesKeysHeld(t *testing.T) {
	var m *keyed.Map[cell]
	var onJudge func()
	m = keyed.New(nil, func() func(*cell) bool {
		if f := onJudge; f != nil {
			onJudge = nil
			f()
		}
		return kill
	}, hotlimit.Options{MaxKeys: 16, AutoSweep: 1})
	check := func(what string) {
		t.Helper()
		assert.Equal(t, int64(m.Len()), keyed.Reserved(m), what)
		assert.LessOrEqual(t, m.Len(), 16, what)
	}
	// Live keys until the auto-sweep's debt is one insertion short of a
	// chunk (the first insertion, into an empty map, owes nothing): the next
	// insertion's step calls judge.
	i := 0
	for ; keyed.StepVisits*i < keyed.SweepChunk; i++ {
		k := strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	check("insertions")
	var inner *cell
	onJudge = func() { inner = add(m, "same", m.Get("same"), 1) } // live: the step's walk keeps it
	outer := m.Get("same")
	require.NotNil(t, inner, "the step ran the inner insertion")
	assert.Same(t, inner, outer, "the outer insertion found the inner one's cell")
	check("an insertion that lost its key to a concurrent one")

	// Fill the cap, one key idle: a new key evicts it.
	for ; m.Len() < 15; i++ {
		k := strconv.Itoa(i)
		add(m, k, m.Get(k), 1)
	}
	idle := m.Get("idle")
	check("a full cap")
	require.NotNil(t, m.Get("new"))
	_, ok := m.Peek("idle")
	assert.False(t, ok)
	check("an eviction")

	// A Revive between a Sweep's kill and its deletion keeps the key.
	c := add(m, "new", m.Get("new"), 1)
	add(m, "new", c, -1)
	var revived *cell
	m.Sweep(func(x *cell) bool {
		if x != c || !kill(x) {
			return false
		}
		revived = m.Revive("new", x)
		return true
	})
	require.NotNil(t, revived)
	assert.NotSame(t, c, revived)
	check("a Revive of a dead cell still held")

	// A Revive of the key evicted under its caller re-inserts it past the cap.
	require.Equal(t, 1, m.Sweep(func(x *cell) bool { return x == revived && kill(x) }))
	add(m, "more", m.Get("more"), 1) // the cap is full again
	check("a full cap")
	require.True(t, kill(idle) || idle.n.Load() == dead)
	add(m, "idle", idle, 1) // revives "idle", deleted: past the cap
	assert.Equal(t, 17, m.Len(), "a revived key may exceed the cap by one")
	assert.Equal(t, int64(17), keyed.Reserved(m))
	assert.Nil(t, m.Get("denied"), "no idle key: denied")
	assert.Equal(t, int64(17), keyed.Reserved(m), "a denied key reserves nothing")

	// A Sweep releases every key it deletes.
	for _, k := range held(m, append([]string{"same", "new", "more", "idle"}, keysUpTo(i)...)...) {
		cur, _ := m.Peek(k)
		add(m, k, cur, -cur.n.Load())
	}
	m.Sweep(kill)
	assert.Zero(t, m.Len())
	assert.Zero(t, keyed.Reserved(m))
}

// keysUpTo returns the keys 0 … n−1.
func keysUpTo(n int) []string {
	keys := make([]string, n)
	for i := range n {
		keys[i] = strconv.Itoa(i)
	}
	return keys
}

// TestWalkerOnAStaleClaimLosesNothing forces a walker to visit nodes it
// claimed after a Sweep unlinked some of them, the cursor's node included,
// and a caller revived one of their keys: the walker's kill of its first
// node runs them. The walker then finds dead nodes already unlinked and
// unlinks through stale links, which must skip no live node and delete no
// revived key: every live key keeps its cell and stays listed, and the count
// of the cap stays the keys held.
func TestWalkerOnAStaleClaimLosesNothing(t *testing.T) {
	var judge func() func(*cell) bool
	m, cells := capped(16, &judge, 14, 13, 8) // listed 15, 14, 13, …, 8 (the first claim's last), …, 0
	armed := true
	judge = func() func(*cell) bool {
		return func(c *cell) bool {
			if c == cells[15] && armed {
				armed = false
				require.Equal(t, 3, m.Sweep(kill), "the Sweep deleted 14, 13 and 8")
				add(m, "13", cells[13], 1) // revives 13
			}
			return kill(c)
		}
	}
	require.NotNil(t, m.Get("x"), "the Sweep made room")
	require.False(t, armed)
	live := keysUpTo(16)
	live = slices.DeleteFunc(live, func(k string) bool { return k == "14" || k == "8" })
	assert.ElementsMatch(t, append([]string{"x"}, live...), held(m, append(keysUpTo(16), "x")...))
	for _, k := range live {
		c, _ := m.Peek(k)
		require.NotNil(t, c, k)
		assert.Equal(t, int64(1), c.n.Load(), "%s kept its live cell", k)
		if k != "13" {
			assert.Same(t, cells[mustAtoi(t, k)], c, "%s kept its cell", k)
		}
	}
	c13, _ := m.Peek("13")
	assert.NotSame(t, cells[13], c13, "13 holds its revived cell")
	assertListed(t, m, append([]string{"x"}, live...)...)
	assert.Equal(t, int64(m.Len()), keyed.Reserved(m))
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	i, err := strconv.Atoi(s)
	require.NoError(t, err)
	return i
}

// TestAutoSweepVisitsEveryNodeInAPass holds live keys in a map with
// auto-sweep, and inserts more live keys: within the insertions that pay for
// one pass, the walks visit every node listed at the start, the nodes the
// cursor stopped on included. The pass visits the nodes pushed meanwhile
// too: i insertions pay StepVisits·i visits of at most held+i nodes (and two
// chunks, for where the cursor stood and the debt not yet paid).
func TestAutoSweepVisitsEveryNodeInAPass(t *testing.T) {
	const held = 20 * keyed.SweepChunk
	visited := map[*cell]bool{}
	m := keyed.New(nil, func() func(*cell) bool {
		return func(c *cell) bool { visited[c] = true; return kill(c) }
	}, hotlimit.Options{AutoSweep: 1})
	var start []*cell
	for i := range held {
		k := strconv.Itoa(i)
		start = append(start, add(m, k, m.Get(k), 1))
	}
	clear(visited)
	pass := (held + 2*keyed.SweepChunk) / (keyed.StepVisits - 1)
	inserts := 0
	for ; inserts < 2*pass; inserts++ {
		if !slices.ContainsFunc(start, func(c *cell) bool { return !visited[c] }) {
			break
		}
		k := "new-" + strconv.Itoa(inserts)
		add(m, k, m.Get(k), 1)
	}
	for i, c := range start {
		assert.True(t, visited[c], "key %d visited", i)
	}
	assert.LessOrEqual(t, inserts, pass, "insertions before every node was visited")
	assert.Equal(t, held+inserts, m.Len(), "no live key evicted")
}
