package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestWaitsAreExactAtTheEdges: for random limits, windows (non-whole
// seconds included, up to MaxWindow) and clocks near 0, today, 2100 and the
// ends of int64, with steps back: a denial's finite RetryAfter r never ends
// past math.MaxInt64, the same Take r − 1 ns later is denied and r later
// passes; and a finite ResetAfter is exactly when the key reports full.
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	limitertest.WindowedWaitsAreExact(t, 5, slidingcounter.MaxLimit, slidingcounter.MinWindow, slidingcounter.MaxWindow,
		func(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return slidingcounter.New(limit, window, hotlimit.WithClock(clock))
		})
}
