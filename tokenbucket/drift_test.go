package tokenbucket

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestNoDrift: a long run of tiny clock steps (1 to 997 ns), a request
// batch at each, passes what the exact model passes over the whole run, ±1,
// and never more than capacity + rate·elapsed. At 5 per second a step
// refills about 0.65 units (2^−18 token): a limiter that rounded each refill
// down would lose about half of them, tokens over the run.
//
// The model here runs on its own, not following the limiter; it admits at
// the first step at or after the exact instant its bucket holds n tokens.
func TestNoDrift(t *testing.T) {
	steps, drained := 2_000_000, 100_000
	if testing.Short() {
		steps, drained = 1_000_000, 20_000
	}
	for _, cfg := range []struct {
		limit  int
		window time.Duration
		drain  bool // take every whole token at each step, else one request
		steps  int
	}{
		{5, time.Second, false, steps},
		{3, 7 * time.Millisecond, false, steps},
		{1 << 16, time.Millisecond, true, drained}, // F = 0: each step refills about 32.8 tokens
		{1000, time.Millisecond, true, drained},    // F = 5
	} {
		t.Run(fmt.Sprintf("limit=%d/window=%v", cfg.limit, cfg.window), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(cfg.limit), 5))
			tw := newTwin(t, cfg.limit, cfg.window, 0, time.Nanosecond)
			m := tw.m
			var passed, modelPassed int64
			var next int64 // the model's next request passes at next or later
			one := big.NewRat(1, 1)
			for range cfg.steps {
				now := tw.now.Add(1 + r.Int64N(997))
				if !cfg.drain {
					if tw.lim.Allow("k") {
						passed++
					}
					// The model's single request at now passes when its
					// bucket holds a token: from next on.
					if now >= next {
						m.Admit("k", now, 1)
						modelPassed++
						next = now + m.Wait("k", now, one)
					}
					continue
				}
				if rem := tw.lim.Take("k", 0).Remaining; rem > 0 {
					d := tw.lim.Take("k", rem)
					require.True(t, d.Allowed)
					require.Zero(t, d.Remaining)
					passed += int64(rem)
				}
				if x := models.FloorRat(m.Tokens("k", now)); x > 0 {
					m.Admit("k", now, x)
					modelPassed += x
				}
			}
			elapsed := tw.now.Load()
			bound := new(big.Rat).Mul(m.Rate, new(big.Rat).SetInt64(elapsed))
			bound.Add(bound, m.Cap)
			t.Logf("%d steps over %v: passed %d, model %d, bound %s", cfg.steps, time.Duration(elapsed), passed, modelPassed, bound.FloatString(3))
			assert.InDelta(t, modelPassed, passed, 1)
			assert.LessOrEqual(t, passed, models.FloorRat(bound))
			assert.Greater(t, passed, int64(cfg.limit), "the run refilled tokens")
		})
	}
}

// TestWholeTokens: where the exact model lands on a whole token, so does the
// limiter. A bucket emptied at any instant holds exactly m tokens m token
// times later, whatever the instant (refills are whole numbers of units
// apart: m·2^F).
func TestWholeTokens(t *testing.T) {
	for _, cfg := range []struct {
		limit  int
		window time.Duration
	}{
		{5, time.Second}, {100, time.Minute}, {1000, time.Second}, {1, day}, {1 << 10, 1024 * time.Millisecond},
	} {
		tok := cfg.window / time.Duration(cfg.limit)
		require.Equal(t, cfg.window, tok*time.Duration(cfg.limit), "a token takes a whole number of nanoseconds")
		r := rand.New(rand.NewPCG(uint64(cfg.limit), 9))
		for i := range 300 {
			clock := r.Int64N(1 << 50)
			lim, err := New(cfg.limit, cfg.window, hotlimit.WithClock(func() int64 { return clock }))
			require.NoError(t, err)
			clock += r.Int64N(int64(cfg.window) * 5)
			require.True(t, lim.Take("k", cfg.limit).Allowed, "step %d", i)
			m := 1 + r.IntN(cfg.limit)
			clock += int64(m) * int64(tok)
			d := lim.Take("k", 0)
			assert.Equal(t, m, d.Remaining, "step %d: %d per %v, %d token times later", i, cfg.limit, cfg.window, m)
			// Full again a window after it emptied, or less than a unit of
			// time before (the unit grid is the epoch's, not this instant's).
			unit := time.Duration((lim.b.Window + lim.b.PerWindow - 1) / lim.b.PerWindow)
			full := time.Duration(cfg.limit-m) * tok
			assert.LessOrEqual(t, d.ResetAfter, full, "step %d", i)
			assert.Greater(t, d.ResetAfter, full-unit, "step %d", i)
		}
	}
}
