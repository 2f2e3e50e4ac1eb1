package slidinglog_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/models"
)

// TestDifferential: random calls and clock moves, including steps back and
// long idle spells, with random Sweeps in between, give the same Decision as
// the sequential model, field by field.
func TestDifferential(t *testing.T) {
	steps := 20000
	if testing.Short() {
		steps = 3000
	}
	for _, limit := range []int{1, 2, 3, 7, 64} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("limit=%d/seed=%d", limit, seed), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(limit)))
				window := time.Duration(1+rng.IntN(1000)) * time.Millisecond
				lim, clock := newAt(t, limit, window)
				m := models.NewSlidingLog(limit, window)
				clock.Store(rng.Int64N(1<<40) - 1<<39)
				keys := []string{"a", "b", "c"}
				for step := range steps {
					switch r := rng.IntN(100); {
					case r < 40:
					case r < 80:
						clock.Add(rng.Int64N(int64(window) / int64(limit)))
					case r < 90:
						clock.Add(rng.Int64N(2 * int64(window)))
					case r < 95:
						clock.Add(-rng.Int64N(int64(window)))
					case r < 97:
						require.Equal(t, m.Sweep(clock.Load()), lim.Sweep(), "step %d", step)
					default:
						clock.Add(int64(window)) // exactly one window: the boundary
					}
					key := keys[rng.IntN(len(keys))]
					n := rng.IntN(limit+2) - rng.IntN(2)
					if rng.IntN(3) > 0 {
						n = 1
					}
					now := clock.Load()
					want := m.Take(key, n, now)
					if n == 1 && rng.IntN(2) == 0 {
						require.Equal(t, want.Allowed, lim.Allow(key), "step %d key %s now %d", step, key, now)
						continue
					}
					require.Equal(t, want, lim.Take(key, n), "step %d key %s n %d now %d", step, key, n, now)
				}
			})
		}
	}
}
