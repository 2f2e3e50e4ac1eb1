package slidinglog_test

import (
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, limit := range []int{1, 7, 20} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(slidinglog.New), limit)
		})
	}
}
