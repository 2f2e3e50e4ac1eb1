package fixedwindow_test

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, limit := range []int{1, 7, 20} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(fixedwindow.New), limit)
		})
	}
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: see
// limitertest.CappedAllowRemainingIsNone.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	limitertest.CappedAllowRemainingIsNone(t, limitertest.Adapt(fixedwindow.New, hotlimit.WithMaxKeys(1)))
}
