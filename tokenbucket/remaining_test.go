package tokenbucket_test

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, burst := range []int{0, 3, 20} {
		t.Run("burst="+strconv.Itoa(burst), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(tokenbucket.New, hotlimit.WithBurst(burst)), 7)
		})
	}
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: see
// limitertest.CappedAllowRemainingIsNone.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	limitertest.CappedAllowRemainingIsNone(t, limitertest.Adapt(tokenbucket.New, hotlimit.WithMaxKeys(1)))
}
