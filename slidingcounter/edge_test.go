package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// newWindowed is New with a clock, as the limitertest checks call it.
func newWindowed(limit int, window time.Duration, clock hotlimit.Clock) (hotlimit.Limiter, error) {
	return slidingcounter.New(limit, window, hotlimit.WithClock(clock))
}

// TestWaitsAreExactAtTheEdges: for random limits, windows (non-whole
// seconds included, up to MaxWindow) and clocks near 0, today, 2100 and the
// ends of int64, with steps back: a denial's finite RetryAfter r never ends
// past math.MaxInt64, the same Take r − 1 ns later is denied and r later
// passes; and a finite ResetAfter is exactly when the key reports full.
func TestWaitsAreExactAtTheEdges(t *testing.T) {
	limitertest.WindowedWaitsAreExact(t, 5, slidingcounter.MaxLimit, slidingcounter.MinWindow, slidingcounter.MaxWindow, newWindowed)
}

// TestWaitLongerThanADurationIsNever: a clock that steps back about 300
// years behind a drained key's window (300 windows of MaxWindow) reads a
// wait longer than a Duration holds, though it ends before math.MaxInt64:
// both durations are Never, as the package documentation says.
func TestWaitLongerThanADurationIsNever(t *testing.T) {
	limitertest.WaitLongerThanADurationIsNever(t, slidingcounter.MaxWindow, newWindowed)
}
