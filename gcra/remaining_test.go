package gcra_test

import (
	"cmp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, burst := range []int{0, 3, 20} {
		t.Run("burst="+strconv.Itoa(burst), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(gcra.New, hotlimit.WithBurst(burst)), 7)
		})
	}
}

// TestAllowRemainingLinearizable: with the clock frozen on a partly refilled
// key (17 per second, fine ticks, burst 5, drained at 0 and asked at 200 ms:
// 3.4 tokens), 16 goroutines call AllowRemaining, released at once: exactly
// the model's 3 pass, and their Remaining values are 2, 1, 0, each reported
// once, as a sequential caller would see them.
func TestAllowRemainingLinearizable(t *testing.T) {
	const goroutines = 16
	for round := range 20 {
		var now atomic.Int64
		lim, err := gcra.New(17, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(5))
		require.NoError(t, err)
		require.True(t, lim.Take("k", 5).Allowed)
		now.Store(int64(200 * time.Millisecond))
		model := models.NewGCRA(17, 5, time.Second, 0)
		model.Take("k", 5, 0)
		want := model.Take("k", 0, now.Load()).Remaining
		require.Equal(t, 3, want)
		rems := limitertest.RaceAllowRemaining(lim.AllowRemaining, "k", goroutines, 4)
		require.Equal(t, []int{0, 1, 2}, rems, "round %d: Remaining values of the admissions", round)
	}
}

// TestNestedCallsChainRemaining: with the clock frozen, AllowRemaining and
// Take(key, 1..3) calls nested inside each other's clock readings, two to
// four levels deep, land their writes between a caller's two loads of the
// word: each decision is the model's, the admissions' Remaining values form
// one chain down from the key's Remaining at the freeze, no denial reports
// room, and the key ends as the model's (see
// limitertest.NestedCallsChainRemaining). With a burst of the limit, and of
// 12 whatever the limit (3 to 12 per second).
func TestNestedCallsChainRemaining(t *testing.T) {
	for _, burst := range []int{0, 12} {
		t.Run("burst="+strconv.Itoa(burst), func(t *testing.T) {
			limitertest.NestedCallsChainRemaining(t, limitertest.Adapt(gcra.New, hotlimit.WithBurst(burst)), func(limit int, window time.Duration) limitertest.Model {
				return models.NewGCRA(limit, cmp.Or(burst, limit), window, 0).Take
			}, 1000)
		})
	}
}
