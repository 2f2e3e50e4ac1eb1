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

// TestMapHammerAcrossTableReplacements: limiter-like traffic (Get, a CAS
// that takes the cell, revival of a dead one, a Drop of some dead ones, a
// CAS that gives it back) on thousands of keys, against Sweep and SweepMap
// passes that evict them again, so that the table's shards grow, shrink and
// shed their tombstones over and over under lock-free lookups; with an
// auto-sweep, and with a key cap (whose table is sized up front, so its
// shards are rebuilt in place). While a caller holds a cell taken, no kill
// can tombstone it, so the key maps to that very cell throughout: every
// lookup of it finds it, and the cell it finds is its own. At rest the list
// holds exactly the keys held, and under the cap the count is the keys held.
func TestMapHammerAcrossTableReplacements(t *testing.T) {
	for _, tc := range []struct {
		name              string
		autoSweep, maxKey int
	}{{"autosweep", 500, 0}, {"maxkeys", 0, 500}} {
		t.Run(tc.name, func(t *testing.T) {
			const workers, keys = 2, 6000
			rounds := 4
			if testing.Short() {
				rounds = 2
			}
			m := newMap(tc.autoSweep, tc.maxKey)
			var stop atomic.Bool
			var lost, foreign, revivals atomic.Int64
			var wg, sweeper sync.WaitGroup
			sweeper.Add(1)
			go func() {
				defer sweeper.Done()
				for i := 0; !stop.Load(); i++ {
					if i%2 == 0 {
						m.Sweep(kill)
					} else {
						m.SweepMap(kill)
					}
				}
			}()
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for r := range rounds {
						for i := range keys {
							// Each worker's own keys, and one in eight shared.
							k := "w" + strconv.Itoa(w) + "-" + strconv.Itoa(i)
							if i%8 == 0 {
								k = "s" + strconv.Itoa(i)
							}
							c := m.Get(k)
							if c == nil {
								continue // denied by the cap: no key idle in the walk's visits
							}
							for {
								v := c.n.Load()
								if v == dead {
									if (i+r)%5 == 0 {
										m.Drop(k, c) // as a limiter's Sweep-racing caller may
										c = m.Get(k)
										if c == nil {
											break
										}
										continue
									}
									revivals.Add(1)
									c = m.Revive(k, c)
									continue
								}
								if c.n.CompareAndSwap(v, v+1) {
									break
								}
							}
							if c == nil {
								continue
							}
							// Taken: no kill tombstones c until it is given back.
							if got := m.Load(k); got != c {
								lost.Add(1)
							}
							if got, ok := m.Peek("w" + strconv.Itoa(1-w) + "-" + strconv.Itoa(i)); ok && got == c {
								foreign.Add(1)
							}
							c.n.Add(-1)
						}
					}
				}()
			}
			wg.Wait()
			stop.Store(true)
			sweeper.Wait()
			assert.Zero(t, lost.Load(), "a key held throughout a lookup was missed, or mapped to another cell")
			assert.Zero(t, foreign.Load(), "a lookup found another key's cell")
			assertListedAfterSweep(t, m)
			if tc.maxKey > 0 {
				assert.EqualValues(t, keyed.Reserved(m), m.Len(), "count = keys held at rest")
				assert.LessOrEqual(t, int64(m.Len()), int64(tc.maxKey)+revivals.Load())
			}
			require.Greater(t, keyed.Growths(m), int64(10), "the shards' arrays were replaced under the traffic")
		})
	}
}
