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
