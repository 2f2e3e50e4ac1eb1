package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
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

// TestRetryAfterWhereTheProductIsAPowerOfTwo: the wait's span is ⌊((a+1)·
// Window − 1)/prev⌋, and with Window = 2^50 ns and a + 1 = 2^14 the product
// is 2^64 exactly, whose low word is zero: the − 1 borrows from the high
// word. At 20000 per 2^50 ns, a key that took 20000 in the previous window
// asks for 3617 (leaving a = 16383) 1 µs into the next: its RetryAfter is
// the model's, found by search.
func TestRetryAfterWhereTheProductIsAPowerOfTwo(t *testing.T) {
	const limit, window = 20000, time.Duration(1 << 50)
	now := int64(window)
	l, err := slidingcounter.New(limit, window, hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	m := models.NewSlidingCounter(limit, window)
	require.True(t, l.Take("k", limit).Allowed)
	m.Take("k", limit, now)
	now = 2*int64(window) + 1000
	want := m.Take("k", limit-16383, now)
	require.False(t, want.Allowed)
	assert.Equal(t, want, l.Take("k", limit-16383))
}
