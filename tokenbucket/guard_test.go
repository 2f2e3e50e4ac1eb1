package tokenbucket

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// period returns 2^T units of refill time in nanoseconds, twice Range: a
// stored timestamp reads the same again after it.
func period(l *Limiter) int64 {
	return int64(2 * l.b.Range())
}

// TestWrapGuardExactPeriod is the case the guard exists for: a bucket
// emptied, then read again exactly 2^T units later, when its stored
// timestamp reads as no time at all. The guard has evicted it (it was full
// long before), so the key is full. The control limiter, its guard turned
// off, reads no time passed and denies.
func TestWrapGuardExactPeriod(t *testing.T) {
	for _, guarded := range []bool{true, false} {
		t.Run(fmt.Sprintf("guard=%t", guarded), func(t *testing.T) {
			tw := newTwin(t, 1<<20, time.Millisecond, 0, time.Millisecond)
			tw.others = true
			if !guarded {
				tw.lim.soft, tw.lim.hard, tw.lim.back = math.MaxInt64, math.MaxInt64, math.MaxInt64/2
			}
			p := period(tw.lim)
			require.Equal(t, int64(1<<tw.lim.b.TickBits)*int64(tw.lim.b.Window)/int64(tw.lim.b.PerWindow), p)
			tw.now.Store(int64(time.Second))
			require.True(t, tw.lim.Take("k", 1<<20).Allowed)
			tw.now.Add(p)
			d := tw.lim.Take("k", 1<<20)
			if guarded {
				assert.True(t, d.Allowed, "a key idle for 2^T units is full")
				assert.Positive(t, tw.lim.swept.Load())
			} else {
				assert.False(t, d.Allowed, "without the guard, the timestamp wraps")
			}
		})
	}
}

// TestWrapGuardJumps plays random sequences on short-Range limiters with a
// clock that never goes back but jumps: by fractions of Range (background
// sweeps), by several Ranges plus small offsets (sweeps before any read),
// and by exact multiples of 2^T units. Every decision must match the model,
// which knows nothing of sweeps: with such a clock they change nothing.
func TestWrapGuardJumps(t *testing.T) {
	seqs, calls := 60, 150
	if testing.Short() {
		seqs = 15
	}
	for ci, cfg := range []struct {
		limit  int
		window time.Duration
	}{
		{1 << 20, time.Millisecond}, // Range 69.9 minutes
		{1 << 16, time.Millisecond}, // 12.4 days
		{5, time.Second},            // 38.8 days
	} {
		t.Run(fmt.Sprintf("limit=%d/window=%v", cfg.limit, cfg.window), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 77))
			keys := []string{"a", "b", "c", "d", "e"}
			sweeps := 0
			for seq := range seqs {
				epoch := r.Int64N(1e15)
				// Offsets of a nanosecond leave the millisecond grid: not
				// exact, band calls left to the limiter.
				tw := newTwin(t, cfg.limit, cfg.window, epoch, time.Nanosecond)
				tw.others = true
				rng := int64(tw.lim.b.Range())
				p := period(tw.lim)
				w := int64(cfg.window)
				for i := range calls {
					var step int64
					switch q := r.IntN(100); {
					case q < 50:
						step = r.Int64N(2*w) / int64(time.Millisecond) * int64(time.Millisecond)
					case q < 65:
						step = rng / int64(2+r.IntN(4)) // R/2 .. R/5
					case q < 80:
						step = int64(1+r.IntN(4))*rng + []int64{0, 1, -1, w, -w, w / 3}[r.IntN(6)]
					case q < 90:
						step = int64(1+r.IntN(3)) * p // the stored timestamps read as now
					default:
						step = int64(1+r.IntN(3))*p - []int64{1, w / 2, w}[r.IntN(3)]
					}
					tw.now.Add(step)
					msg := fmt.Sprintf("%v seq %d step %d (+%v)", tw, seq, i, time.Duration(step))
					key := keys[r.IntN(len(keys))]
					n := randomN(r, cfg.limit)
					if r.IntN(3) == 0 {
						n = cfg.limit // drain, so that the next jump matters
					}
					// No probes: they move the clock back, and a background
					// sweep may read it meanwhile.
					tw.take(key, n, r.IntN(2) == 0, false, msg)
					if t.Failed() {
						return
					}
				}
				if tw.lim.swept.Load() > 0 {
					sweeps++
				}
			}
			assert.Equal(t, seqs, sweeps, "every sequence swept")
		})
	}
}

// TestGuardRaisesStaleReading: a reading more than Range/4 behind the
// generation (a caller stalled since it read the clock, or a clock that
// stepped far back) is raised to Range/4 behind it, a time already past.
func TestGuardRaisesStaleReading(t *testing.T) {
	tw := newTwin(t, 1<<20, time.Millisecond, 0, time.Millisecond)
	tw.now.Store(3 * int64(time.Hour))
	tw.lim.Sweep()
	gen := tw.lim.swept.Load()
	require.Equal(t, 3*int64(time.Hour), gen)
	tw.now.Store(int64(time.Hour))
	tt, g, lag := tw.lim.read()
	assert.Equal(t, gen, g)
	assert.Equal(t, uint64(gen-tw.lim.back), tt)
	assert.Zero(t, lag)
	// A reading within Range/4 behind stands.
	tw.now.Store(gen - tw.lim.back + 1)
	tt, _, _ = tw.lim.read()
	assert.Equal(t, uint64(gen-tw.lim.back+1), tt)
}
