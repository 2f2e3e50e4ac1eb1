package redislimit_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestLeaseModelAcrossInstances checks the lease's contract against the
// algorithms' exact bounds: several Limiters on one Redis, each with a lease
// and a client of its own (as separate processes), share a clock that the
// test holds still while many goroutines take random n from random keys
// through random instances (refunding some of what passed at once), and
// then steps, by less than the lease's ttl or more, across windows or not. Every admission is attributed to the frozen
// reading it was decided at. Never more passes than the algorithm allows,
// for every instance together: for the fixed window, at most the limit per
// key and window; for the token bucket and GCRA, at most burst +
// ⌊limit × (t2 − t1 + ttl) / window⌋ over every span of readings [t1, t2]:
// a leased request passes up to ttl after Redis took it (WithLease), so the
// requests that pass in [t1, t2] were taken in Redis within (t1 − ttl, t2],
// and a lease granted at one reading and spent at the next adds to the
// requests Redis passes there, past the burst at that reading alone. At the
// end of each step, once the replaced leases' give-backs are done and
// Sweep has ended the expired ones, every lease holds at most its size,
// and for the fixed window Redis counts exactly what passed in the window
// plus what the live leases hold: the under-admission is what the leases
// hold, no more.
func TestLeaseModelAcrossInstances(t *testing.T) {
	srv := redistest.Start(t)
	const (
		instances = 3
		size      = 4
		workers   = 8
		perStep   = 12
	)
	steps := 40
	if testing.Short() {
		steps = 15
	}
	keys := []string{"a", "b", "c"}
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 20, Window: time.Second}
			window := int64(c.Window)
			ttl := 300 * time.Millisecond
			seed := uint64(time.Now().UnixNano())
			t.Logf("seed %d", seed)
			rng := rand.New(rand.NewPCG(seed, 7))
			var now atomic.Int64
			now.Store(100*window + rng.Int64N(window))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix(fmt.Sprintf("model%d:", seed))
			lims := make([]*redislimit.Limiter, instances)
			for i := range lims {
				lims[i] = newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl))
			}
			observer := newExact(t, newClient(t, srv), c, clocked, prefix)

			type admitted struct {
				at int64
				n  int
			}
			passed := map[string][]admitted{}
			for range steps {
				at := now.Load()
				var mu sync.Mutex
				counts := map[string]int{}
				var wg sync.WaitGroup
				takes := 1 + rng.IntN(perStep) // some steps use up the keys, others not
				for w := range workers {
					wseed := rng.Uint64()
					wg.Add(1)
					go func() {
						defer wg.Done()
						r := rand.New(rand.NewPCG(wseed, uint64(w)))
						for range takes {
							key := keys[r.IntN(len(keys))]
							n := r.IntN(3) // 0, 1 or 2; sometimes more than a lease
							if r.IntN(10) == 0 {
								n = size + 1 + r.IntN(3)
							}
							lim := lims[r.IntN(instances)]
							d, rcpt, err := lim.TakeReceiptContext(t.Context(), key, n)
							if !assert.NoError(t, err) {
								return
							}
							if d.Allowed && n > 0 && r.IntN(8) == 0 {
								// given back at once, from a lease or not:
								// it passed nowhere
								if !assert.NoError(t, lim.RefundContext(t.Context(), key, rcpt)) {
									return
								}
								continue
							}
							if d.Allowed && n > 0 {
								mu.Lock()
								counts[key] += n
								mu.Unlock()
							}
						}
					}()
				}
				wg.Wait()
				for key, n := range counts {
					passed[key] = append(passed[key], admitted{at, n})
				}
				for _, l := range lims {
					redislimit.WaitRetired(l)
				}
				// Step: within a lease's ttl, past it, or into the next window.
				switch r := rng.IntN(4); r {
				case 0:
					now.Add(rng.Int64N(int64(ttl)))
				case 1:
					now.Add(int64(ttl) + rng.Int64N(int64(ttl)))
				case 2:
					now.Add(window - now.Load()%window) // exactly the next window's start
				default:
					now.Add(rng.Int64N(window))
				}
				for _, l := range lims {
					l.Sweep()
				}
				for _, key := range keys {
					held := int64(0)
					for i, l := range lims {
						left := redislimit.LeaseLeft(l, key)
						require.LessOrEqual(t, left, int64(size), "instance %d's lease on %q", i, key)
						held += left
					}
					if a != hotlimit.FixedWindow {
						continue
					}
					idx := now.Load() / window
					inWindow := 0
					for _, p := range passed[key] {
						if p.at/window == idx {
							inWindow += p.n
						}
					}
					require.LessOrEqual(t, inWindow, c.Limit, "key %q, window %d: over-admission", key, idx)
					assert.Equal(t, c.Limit-inWindow-int(held), take(t, observer, key, 0).Remaining,
						"key %q, window %d: Redis counts what passed and what the leases hold", key, idx)
				}
			}
			for key, ps := range passed {
				total := 0
				for _, p := range ps {
					total += p.n
				}
				require.NotZero(t, total, "key %q: something passed", key)
				switch a {
				case hotlimit.FixedWindow:
					per := map[int64]int{}
					for _, p := range ps {
						per[p.at/window] += p.n
					}
					for w, n := range per {
						assert.LessOrEqual(t, n, c.Limit, "key %q, window %d: over-admission", key, w)
					}
				default:
					burst := int64(burstOf(c))
					for i := range ps {
						sum := int64(0)
						for j := i; j < len(ps); j++ {
							sum += int64(ps[j].n)
							bound := burst + int64(c.Limit)*(ps[j].at-ps[i].at+int64(ttl))/window
							assert.LessOrEqual(t, sum, bound, "key %q, readings [%d, %d]: over-admission", key, ps[i].at, ps[j].at)
						}
					}
				}
			}
		})
	}
}
