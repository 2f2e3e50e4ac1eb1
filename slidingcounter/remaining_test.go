package slidingcounter_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, limit := range []int{1, 7, 20} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(slidingcounter.New), limit)
		})
	}
}

// TestAllowRemainingLinearizable: with the clock frozen where the previous
// window weighs (20 per second, 20 taken at 0.5 s, asked at 1.25 s: prev 20
// weighs 15), 16 goroutines call AllowRemaining, released at once: exactly
// the model's 5 pass, and their Remaining values are 4, ..., 0, each reported
// once, as a sequential caller would see them.
func TestAllowRemainingLinearizable(t *testing.T) {
	const goroutines = 16
	for round := range 20 {
		var now atomic.Int64
		now.Store(int64(500 * time.Millisecond))
		lim, err := slidingcounter.New(20, time.Second, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		model := models.NewSlidingCounter(20, time.Second)
		require.True(t, lim.Take("k", 20).Allowed)
		model.Take("k", 20, now.Load())
		now.Store(int64(1250 * time.Millisecond))
		want := model.Take("k", 0, now.Load()).Remaining
		require.Equal(t, 5, want)
		rems := limitertest.RaceAllowRemaining(lim.AllowRemaining, "k", goroutines, 4)
		require.Equal(t, []int{0, 1, 2, 3, 4}, rems, "round %d: Remaining values of the admissions", round)
	}
}

// TestNestedCallsChainRemaining: with the clock frozen, AllowRemaining and
// Take(key, 1..3) calls nested inside each other's clock readings, two to
// four levels deep, land their writes between a caller's two loads of the
// word: each decision is the model's, the admissions' Remaining values form
// one chain down from the key's Remaining at the freeze, no denial reports
// room, and the key ends as the model's (see
// limitertest.NestedCallsChainRemaining).
func TestNestedCallsChainRemaining(t *testing.T) {
	limitertest.NestedCallsChainRemaining(t, limitertest.Adapt(slidingcounter.New), func(limit int, window time.Duration) limitertest.Model {
		return models.NewSlidingCounter(limit, window).Take
	}, 2000)
}
