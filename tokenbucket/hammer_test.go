package tokenbucket

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestFrozenClockHammer: exactly limit per key and round, from 32
// goroutines, with and without a concurrent Sweep (see limitertest); each
// round is a window after the last, when every bucket is full again.
func TestFrozenClockHammer(t *testing.T) {
	limitertest.FrozenHammer(t, limitertest.Adapt(New), time.Second,
		func(r int) time.Duration { return time.Duration(r) * time.Second },
		func(limit int) int { return limit })
}

// TestPhasedHammer moves a fake clock between barriers; in each phase all
// goroutines hammer one key with Take(n) of every size, then drain it, so
// the phase ends with less than a token. The tokens taken in a phase must be
// exactly those the model holds at the phase's time (millisecond clock steps:
// an exact twin). Some configurations jump by several Ranges between phases,
// so that several goroutines sweep at once before reading; one runs a
// goroutine sweeping in a loop besides.
func TestPhasedHammer(t *testing.T) {
	phases, goroutines := 200, 8
	if testing.Short() {
		phases = 30
	}
	for ci, cfg := range []struct {
		limit   int
		window  time.Duration
		jumps   bool
		sweeper bool
	}{
		{7, 10 * time.Millisecond, false, false},
		{5, time.Second, false, true},
		{100, time.Minute, false, false},
		{1 << 16, time.Millisecond, true, false},
		{1 << 20, time.Millisecond, true, true},
	} {
		t.Run(fmt.Sprintf("limit=%d/window=%v/jumps=%t/sweeper=%t", cfg.limit, cfg.window, cfg.jumps, cfg.sweeper), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 11))
			tw := newTwin(t, cfg.limit, cfg.window, r.Int64N(1e15), time.Millisecond)
			require.True(t, tw.exact)
			lim, m := tw.lim, tw.m
			var stop atomic.Bool
			var sweeps sync.WaitGroup
			if cfg.sweeper {
				sweeps.Go(func() {
					for !stop.Load() {
						lim.Sweep()
						runtime.Gosched()
					}
				})
			}
			tok := int64(cfg.window) / int64(cfg.limit)
			for phase := range phases {
				var step int64
				switch q := r.IntN(10); {
				case q < 2:
				case q < 7:
					step = r.Int64N(3 * max(tok, int64(time.Millisecond)))
				case q < 9 || !cfg.jumps:
					step = r.Int64N(2 * int64(cfg.window))
				default:
					step = int64(1+r.IntN(3))*int64(lim.b.Range()) + r.Int64N(int64(cfg.window))
				}
				now := tw.now.Add(step / int64(time.Millisecond) * int64(time.Millisecond))
				mt, _ := m.At(now)
				want := models.FloorRat(m.Tokens("k", mt))

				var taken atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range goroutines {
					wg.Go(func() {
						gr := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
						<-start
						for range 20 {
							if n := 1 + gr.IntN(cfg.limit); lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
						// Drain: halving sizes, each until denied.
						for n := cfg.limit; n >= 1; n /= 2 {
							for lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				assert.Equal(t, want, taken.Load(), "phase %d at %v", phase, time.Duration(mt))
				if want > 0 {
					m.Admit("k", mt, want)
				}
				tw.checkState("k", fmt.Sprintf("phase %d", phase))
				if t.Failed() {
					break
				}
			}
			stop.Store(true)
			sweeps.Wait()
			if cfg.jumps {
				assert.Positive(t, lim.swept.Load(), "the jumps made the guard sweep")
			}
		})
	}
}

// TestLinearizableRemaining: under a frozen clock, the allowed decisions'
// Remaining values are limit − 1, ..., 0, each exactly once, whatever the
// interleaving (see limitertest); each round is a window after the last.
func TestLinearizableRemaining(t *testing.T) {
	limitertest.LinearizableRemaining(t, limitertest.Adapt(New), time.Second,
		func(r int) time.Duration { return time.Duration(r) * time.Second },
		func(limit int) int { return limit })
}

// TestSharedPhasedHammer: in phases of a clock that moves by whole
// milliseconds (an exact grid), forward, back and to window boundaries,
// concurrent passes equal the model's, and so does the state reported
// afterwards (durations within 1 µs: tokens are fixed-point); with
// sweep=true, Sweeps race the traffic and evict keys in every idle phase
// (see limitertest).
func TestSharedPhasedHammer(t *testing.T) {
	ms := int64(time.Millisecond)
	newModel := func(limit int, window time.Duration) limitertest.Model {
		return models.NewTokenBucket(limit, limit, window, int64(limitertest.PhasedStart)).Take
	}
	limitertest.PhasedHammer(t, limitertest.Adapt(New), newModel, limitertest.Moves(
		func(rng *rand.Rand, window int64) int64 { return rng.Int64N(window/4/ms) * ms },
		func(rng *rand.Rand, window int64) int64 { return window },
		func(rng *rand.Rand, window int64) int64 { return window * rng.Int64N(4) },
		func(rng *rand.Rand, window int64) int64 { return -rng.Int64N(2*window/ms) * ms },
		nil,
	), limitertest.Tolerance(time.Microsecond))
}

// TestExtremeClockDecisions: with clocks at and between both ends of int64,
// no Decision has a negative duration or a denial with RetryAfter 0 (see
// limitertest).
func TestExtremeClockDecisions(t *testing.T) {
	limitertest.ExtremeClocks(t, limitertest.Adapt(New), MinWindow, time.Second, MaxWindow)
}
