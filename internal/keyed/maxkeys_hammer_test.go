package keyed_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/keyed"
)

// TestMaxKeysHammerBoundAndHeldKeysNeverDenied runs many goroutines that
// request the same few new keys and keys of their own, with a key cap, and
// count in each cell they get, as a limiter's admission under a frozen clock
// does: a key counted in is never idle again, so only a cell killed before
// its first count is revived. It checks the cap's bound, count ≤ cap plus
// the revivals, at every step and Len = count at the end, and that a key
// counted in before a request began is never denied as capped.
func TestMaxKeysHammerBoundAndHeldKeysNeverDenied(t *testing.T) {
	const maxKeys, shared = 16, 4
	workers, rounds := 8, 2000
	if testing.Short() {
		rounds = 300
	}
	m := newMap(0, maxKeys)
	var revivals atomic.Int64
	var held sync.Map // keys counted in: held for good
	var wrong, denied, checked atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				k := "s" + strconv.Itoa(i/2%shared)
				// The first rounds ask for the shared keys only: the first
				// caller of each finds room, and it is held for good.
				if i >= 2*shared && i%2 == 1 {
					k = "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
				}
				_, wasHeld := held.Load(k)
				c := m.Get(k)
				if c == nil {
					denied.Add(1)
					if wasHeld {
						wrong.Add(1)
					}
				} else {
					if wasHeld {
						checked.Add(1)
					}
					for {
						v := c.n.Load()
						if v == dead {
							revivals.Add(1) // before the revival can count
							c = m.Revive(k, c)
							continue
						}
						if c.n.CompareAndSwap(v, v+1) {
							break
						}
					}
					held.Store(k, true)
				}
				// count first: the revivals read after it are at least those
				// it counts.
				if r := keyed.Reserved(m); r > maxKeys+revivals.Load() {
					t.Errorf("count %d over the cap %d plus %d revivals", r, maxKeys, revivals.Load())
					return
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, wrong.Load(), "keys held denied as capped")
	require.NotZero(t, denied.Load(), "the cap was reached: the hammer tested it")
	require.NotZero(t, checked.Load(), "keys held were asked for again")
	assert.EqualValues(t, keyed.Reserved(m), m.Len(), "Len = count at rest")
	assert.LessOrEqual(t, int64(m.Len()), maxKeys+revivals.Load())
	for i := range shared {
		_, ok := m.Peek("s" + strconv.Itoa(i))
		assert.True(t, ok, "shared key %d held", i)
	}
	assertListedAfterSweep(t, m)
}

// TestMaxKeysFirstRequestsOfOneKeyAtTheLastRoomAllGetIt releases many
// goroutines at once onto one new key, with room under the cap for one
// more key and no key idle: one insertion takes the room, and every caller
// gets its cell, none the cap's denial, round after round.
func TestMaxKeysFirstRequestsOfOneKeyAtTheLastRoomAllGetIt(t *testing.T) {
	const maxKeys, workers = 4, 8
	rounds := 500
	if testing.Short() {
		rounds = 100
	}
	for r := range rounds {
		m := newMap(0, maxKeys)
		for i := range maxKeys - 1 {
			k := "live" + strconv.Itoa(i)
			add(m, k, m.Get(k), 1)
		}
		start := make(chan struct{})
		got := make([]*cell, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if c := m.Get("new"); c != nil {
					got[w] = add(m, "new", c, 1)
				}
			}()
		}
		close(start)
		wg.Wait()
		for w, c := range got {
			if !assert.NotNil(t, c, "round %d, worker %d: denied as capped", r, w) {
				return
			}
		}
		c, ok := m.Peek("new")
		require.True(t, ok, "round %d", r)
		assert.EqualValues(t, workers, c.n.Load(), "round %d: every count in the one cell", r)
		assert.Equal(t, maxKeys, m.Len(), "round %d", r)
		assert.EqualValues(t, maxKeys, keyed.Reserved(m), "round %d", r)
	}
}
