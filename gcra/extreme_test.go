package gcra_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
)

// TestWholeWindowAtTheExtreme: at MaxLimit per MinWindow (T = 0.954 ns), a
// drained key, hammered on a clock that moves a few nanoseconds at a time,
// passes Limit requests in one Window, ±1, as the exact model does: the rate
// is not rounded to a whole nanosecond per request.
func TestWholeWindowAtTheExtreme(t *testing.T) {
	const limit, window = gcra.MaxLimit, gcra.MinWindow
	steps := []int64{1, 7, 1000}
	if testing.Short() {
		steps = []int64{7} // a window still takes a million calls
	}
	for _, step := range steps {
		var now atomic.Int64
		now.Store(5_000_000_017)
		lim, err := gcra.New(limit, window, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		require.True(t, lim.Take("k", limit).Allowed, "a new key holds the burst")
		require.False(t, lim.Allow("k"), "drained")
		start, passed := now.Load(), 0
		for now.Load()-start < int64(window) {
			now.Add(min(step, start+int64(window)-now.Load()))
			for lim.Allow("k") {
				passed++
			}
		}
		assert.InDelta(t, limit, passed, 1, "step %dns: passed in one window", step)
	}
}

// TestDifferentialExtremes plays random sequences, backwards clocks, far
// jumps, refunds and sweeps included, against the sequential model at the ends of New's ranges: limits
// 1, 2, 7, 1000 and MaxLimit, windows from MinWindow to MaxWindow, bursts 1
// and the limit. Exact ticks are checked against the exact model; fine ticks
// against the exact model on the clock floored to a tick (the package
// documentation bounds what that floor costs).
func TestDifferentialExtremes(t *testing.T) {
	seqs := 12
	if testing.Short() {
		seqs = 3
	}
	windows := []time.Duration{gcra.MinWindow, gcra.MinWindow + 1, time.Second, time.Hour + 1, gcra.MaxWindow - 1, gcra.MaxWindow}
	for li, limit := range []int{1, 2, 7, 1000, gcra.MaxLimit} {
		for wi, window := range windows {
			for _, burst := range []int{1, limit} {
				cfg := diffConfig{limit: limit, burst: burst, window: window}
				t.Run(fmt.Sprintf("limit=%d/burst=%d/window=%v", limit, burst, window), func(t *testing.T) {
					rng := rand.New(rand.NewPCG(uint64(li), uint64(wi*2+burst)))
					for seq := range seqs {
						r := newDiffRunOf(t, rng, cfg)
						for step := range 60 {
							r.tick(true)
							if !r.callOrRefund(t, fmt.Sprintf("seq %d step %d", seq, step)) {
								return
							}
						}
					}
				})
			}
		}
	}
}
