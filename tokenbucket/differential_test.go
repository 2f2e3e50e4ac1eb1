package tokenbucket

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// diffConfigs are the policies of the differential tests.
// burst 0 is the default, the limit.
var diffConfigs = []struct {
	limit  int
	window time.Duration
	burst  int
}{
	{5, time.Second, 0},
	{3, 7 * time.Millisecond, 0},
	{100, time.Minute, 0},
	{1, 24 * time.Hour, 0},
	{1 << 16, time.Millisecond, 0},
	{100, time.Minute, 10}, // a burst below the limit
	{5, time.Second, 7},    // and above it
	{1, time.Second, 3},
	{3, 7 * time.Millisecond, 1},
}

// burstOf returns a config's burst: the limit unless it sets one.
func burstOf(limit, burst int) int {
	if burst == 0 {
		return limit
	}
	return burst
}

// randomN draws a request size in [-1, limit+1], with the edges and small
// sizes often.
func randomN(r *rand.Rand, limit int) int {
	switch p := r.IntN(100); {
	case p < 5:
		return -1
	case p < 12:
		return 0
	case p < 17:
		return limit + 1
	case p < 22:
		return limit
	case p < 60:
		return 1
	case p < 80:
		return 1 + r.IntN(min(limit, 3))
	default:
		return 1 + r.IntN(limit)
	}
}

// randomStep draws a clock step for limit per window, a multiple of grid:
// zero, tiny, a fraction of a token's time, across token and window
// boundaries, sometimes back.
func randomStep(r *rand.Rand, limit int, window, grid time.Duration) time.Duration {
	tok := window / time.Duration(limit) // the time one token takes
	var d time.Duration
	switch p := r.IntN(100); {
	case p < 15:
		return 0
	case p < 30:
		d = grid * time.Duration(1+r.IntN(3))
	case p < 55:
		d = time.Duration(r.Int64N(int64(2*tok) + 1))
	case p < 65:
		d = time.Duration(r.Int64N(int64(tok/4) + 1))
	case p < 80:
		d = time.Duration(r.Int64N(int64(2*window) + 1))
	case p < 85:
		d = window * time.Duration(1+r.IntN(3))
	default:
		d = -time.Duration(r.Int64N(int64(min(window, 3*tok)) + 1))
	}
	return d / grid * grid
}

// TestDifferential plays thousands of random sequences of (clock step, key,
// n) on the limiter and the model, with Sweeps interleaved, on clocks stepped
// by the millisecond (exact twins: every decision must match) and by the
// nanosecond (the model leaves band calls to the limiter; see twin).
func TestDifferential(t *testing.T) {
	seqs, calls := 400, 120
	if testing.Short() {
		seqs = 60
	}
	keys := []string{"a", "b", "c"}
	for ci, cfg := range diffConfigs {
		for _, grid := range []time.Duration{time.Millisecond, time.Nanosecond} {
			burst := burstOf(cfg.limit, cfg.burst)
			t.Run(fmt.Sprintf("limit=%d/window=%v/burst=%d/grid=%v", cfg.limit, cfg.window, burst, grid), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ci), uint64(grid)))
				band, total := 0, 0
				for seq := range seqs {
					epoch := r.Int64N(2e15) - 1e15
					tw := newBurstTwin(t, cfg.limit, burst, cfg.window, epoch, grid)
					if grid == time.Millisecond && !tw.exact {
						t.Fatalf("%v: a millisecond grid should be exact", tw)
					}
					// Stay well inside the wrap guard's soft span, so that
					// no background sweep runs behind the model's back.
					limitT := tw.lim.soft / 2
					for i := range calls {
						step := randomStep(r, cfg.limit, cfg.window, grid)
						if tw.now.Load()+int64(step)-epoch > limitT {
							break
						}
						tw.now.Add(int64(step))
						msg := fmt.Sprintf("%v seq %d step %d at %d", tw, seq, i, tw.now.Load()-epoch)
						if r.IntN(30) == 0 {
							tw.sweep(msg)
							continue
						}
						key := keys[r.IntN(len(keys))]
						tw.take(key, randomN(r, burst), r.IntN(2) == 0, r.IntN(4) == 0, msg)
						total++
						if t.Failed() {
							return
						}
					}
					band += tw.band
				}
				t.Logf("%d calls, %d left to the limiter (band)", total, band)
			})
		}
	}
}
