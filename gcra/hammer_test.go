package gcra_test

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestFrozenClockHammer: exactly the burst per key and round, from 32
// goroutines, with and without a concurrent Sweep (see limitertest). Rounds
// are 4 s apart: a drained key of burst 3 refills in 3 s at 1 per second.
func TestFrozenClockHammer(t *testing.T) {
	at := func(r int) time.Duration { return time.Duration(4*r) * time.Second }
	t.Run("burst=limit", func(t *testing.T) {
		limitertest.FrozenHammer(t, limitertest.Adapt(gcra.New), time.Second, at, func(limit int) int { return limit })
	})
	t.Run("burst=3", func(t *testing.T) {
		limitertest.FrozenHammer(t, limitertest.Adapt(gcra.New, hotlimit.WithBurst(3)), time.Second, at, func(int) int { return 3 })
	})
}

// TestLinearizableRemaining: under a frozen clock, the allowed decisions'
// Remaining values are burst − 1, ..., 0, each exactly once, whatever the
// interleaving (see limitertest). Rounds are 4 s apart, as above.
func TestLinearizableRemaining(t *testing.T) {
	at := func(r int) time.Duration { return time.Duration(4*r) * time.Second }
	t.Run("burst=limit", func(t *testing.T) {
		limitertest.LinearizableRemaining(t, limitertest.Adapt(gcra.New), time.Second, at, func(limit int) int { return limit })
	})
	t.Run("burst=3", func(t *testing.T) {
		limitertest.LinearizableRemaining(t, limitertest.Adapt(gcra.New, hotlimit.WithBurst(3)), time.Second, at, func(int) int { return 3 })
	})
}

// TestPhasedHammer moves a fake clock between phases (a fraction of T, whole
// tokens, past a full refill, and back) and in each phase lets goroutines
// hammer Take(key, n) with one n: the passes of each key in the phase equal
// those of the sequential model, whatever the interleaving, and so does the
// state reported afterwards; with sweep=true, Sweeps race the traffic and
// evict keys in every idle phase (see limitertest). With a frozen clock and
// one n, the order of the calls does not change how many pass.
func TestPhasedHammer(t *testing.T) {
	const burst = 30
	newModel := func(limit int, window time.Duration) limitertest.Model {
		return models.NewGCRA(limit, burst, window, int64(limitertest.PhasedStart)).Take
	}
	tok := func(window int64) int64 { return window / limitertest.PhasedLimit } // T
	limitertest.PhasedHammer(t, limitertest.Adapt(gcra.New, hotlimit.WithBurst(burst)), newModel, limitertest.Moves(
		func(rng *rand.Rand, window int64) int64 { return rng.Int64N(tok(window)) },
		func(rng *rand.Rand, window int64) int64 { return tok(window) * (1 + rng.Int64N(5)) },
		func(rng *rand.Rand, window int64) int64 { return window * rng.Int64N(2) },
		func(rng *rand.Rand, window int64) int64 { return -rng.Int64N(3 * tok(window)) },
		func(rng *rand.Rand, window int64) int64 { return rng.Int64N(window / 3) },
	))
}

// TestMovingClockHammer moves the clock while goroutines hammer and a Sweep
// loops: a key never passes more than burst + elapsed·limit/window, GCRA's
// conservation law.
func TestMovingClockHammer(t *testing.T) {
	const (
		goroutines = 8
		limit      = 5
		burst      = 3
	)
	calls := 20000
	if testing.Short() {
		calls = 3000
	}
	var now atomic.Int64
	lim, err := gcra.New(limit, ms, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
	require.NoError(t, err)
	stop := make(chan struct{})
	var ticker sync.WaitGroup
	ticker.Go(func() {
		rng := rand.New(rand.NewPCG(9, 10))
		for {
			select {
			case <-stop:
				return
			default:
				now.Add(rng.Int64N(int64(50 * time.Microsecond)))
			}
		}
	})
	sw, _ := limitertest.SweepUntil(lim, stop)
	var passed [2]atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range calls {
				if lim.Allow([]string{"p", "q"}[(g+i)%2]) {
					passed[(g+i)%2].Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	ticker.Wait()
	sw.Wait()
	bound := burst + now.Load()*limit/int64(ms)
	for k := range passed {
		assert.Positive(t, passed[k].Load())
		assert.LessOrEqual(t, passed[k].Load(), bound, "key %d", k)
	}
}

// TestExtremeClockDecisions: with clocks at and between both ends of int64, no
// Decision has a negative duration or a denial with RetryAfter 0 (see
// limitertest).
func TestExtremeClockDecisions(t *testing.T) {
	limitertest.ExtremeClocks(t, limitertest.Adapt(gcra.New), gcra.MinWindow, time.Second, gcra.MaxWindow)
}
