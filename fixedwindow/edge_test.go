package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestWaitsAreExactAtTheEdges: for random limits, windows (non-whole
// seconds included, up to MaxWindow) and clocks near 0, today, 2100 and the
// ends of int64, with steps back: a denial's finite RetryAfter r never ends
// past math.MaxInt64, the same Take r − 1 ns later is denied and r later
// passes; and a finite ResetAfter is exactly when the key reports full.
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	limitertest.WindowedWaitsAreExact(t, 1, fixedwindow.MaxLimit, fixedwindow.MinWindow, fixedwindow.MaxWindow,
		func(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return fixedwindow.New(limit, window, hotlimit.WithClock(clock))
		})
}
