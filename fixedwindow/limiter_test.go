package fixedwindow_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/models"
)

const ms = time.Millisecond

// step is one row of a script: at clock at, Take(key, n) must return want.
type step struct {
	at        time.Duration // the clock, from its origin
	key       string
	n         int
	allowed   bool
	remaining int
	retry     time.Duration
	reset     time.Duration
}

// runScript plays steps on a limiter of limit per window and checks every
// Decision, and that Allow agrees with Take(key, 1) on a twin limiter.
func runScript(t *testing.T, limit int, window time.Duration, steps []step) {
	t.Helper()
	var now atomic.Int64
	lim, err := fixedwindow.New(limit, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i, s := range steps {
		now.Store(int64(s.at))
		key := s.key
		if key == "" {
			key = "k"
		}
		want := hotlimit.Decision{
			Allowed: s.allowed, Limit: limit, Remaining: s.remaining,
			RetryAfter: s.retry, ResetAfter: s.reset,
		}
		assert.Equal(t, want, lim.Take(key, s.n), "step %d", i)
	}
}

func TestScript(t *testing.T) {
	never := hotlimit.Never
	runScript(t, 3, time.Second, []step{
		{at: 10900 * ms, n: 1, allowed: true, remaining: 2, reset: 100 * ms},
		{at: 10900 * ms, n: 2, allowed: true, remaining: 0, reset: 100 * ms},
		{at: 10950 * ms, n: 1, remaining: 0, retry: 50 * ms, reset: 50 * ms},
		// RetryAfter is exact: 1 ns before the boundary, still denied.
		{at: 11*time.Second - 1, n: 1, remaining: 0, retry: 1, reset: 1},
		// The boundary: a new window, nothing counted in it yet.
		{at: 11000 * ms, n: 0, allowed: true, remaining: 3},
		// 3 more 150 ms after the first 3: 2×Limit across a boundary.
		{at: 11050 * ms, n: 3, allowed: true, remaining: 0, reset: 950 * ms},
		{at: 11050 * ms, n: 1, remaining: 0, retry: 950 * ms, reset: 950 * ms},
		{at: 11050 * ms, n: 4, remaining: 0, retry: never, reset: 950 * ms}, // n > limit
		{at: 11050 * ms, n: -1, remaining: 0, retry: never, reset: 950 * ms},
		{at: 11050 * ms, n: 0, allowed: true, remaining: 0, reset: 950 * ms},
		// The clock steps back into window 10: counts against window 11.
		{at: 10500 * ms, n: 1, remaining: 0, retry: 1500 * ms, reset: 1500 * ms},
		{at: 10500 * ms, n: 0, allowed: true, remaining: 0, reset: 1500 * ms},
		{at: 12000 * ms, n: 1, allowed: true, remaining: 2, reset: time.Second},
		// Back 1 ms into window 11, after window 12 was counted: counts in 12.
		{at: 11999 * ms, n: 2, allowed: true, remaining: 0, reset: 1001 * ms},
		{at: 12500 * ms, n: 1, remaining: 0, retry: 500 * ms, reset: 500 * ms},
		// Skipped windows start at zero too.
		{at: 15000 * ms, n: 3, allowed: true, remaining: 0, reset: time.Second},
		// Other keys are independent; reporting a missing key shows it fresh.
		{at: 15000 * ms, key: "other", n: 0, allowed: true, remaining: 3},
		{at: 15000 * ms, key: "other", n: 4, remaining: 3, retry: never},
		{at: 15000 * ms, key: "other", n: -5, remaining: 3, retry: never},
		{at: 15000 * ms, key: "other", n: 1, allowed: true, remaining: 2, reset: time.Second},
	})
}

func TestScriptNegativeClock(t *testing.T) {
	runScript(t, 2, 10*ms, []step{
		// A new key at a negative clock counts in its own window, -2
		// ([-20ms, -10ms)), not in window 0 of the zero word.
		{at: -15 * ms, n: 1, allowed: true, remaining: 1, reset: 5 * ms},
		{at: -10*ms - 1, n: 1, allowed: true, remaining: 0, reset: 1},
		{at: -10*ms - 1, n: 1, remaining: 0, retry: 1, reset: 1},
		{at: -10 * ms, n: 2, allowed: true, remaining: 0, reset: 10 * ms},
		{at: -1, n: 1, remaining: 0, retry: 1, reset: 1},
		{at: 0, n: 1, allowed: true, remaining: 1, reset: 10 * ms},
		// Back to window -3: counts against window 0.
		{at: -25 * ms, n: 1, allowed: true, remaining: 0, reset: 35 * ms},
		{at: -25 * ms, n: 1, remaining: 0, retry: 35 * ms, reset: 35 * ms},
		{at: 10 * ms, n: 2, allowed: true, remaining: 0, reset: 10 * ms},
	})
}

func TestScriptWindowEdges(t *testing.T) {
	// Limit 1 per 1 ms: every boundary, to the nanosecond.
	runScript(t, 1, ms, []step{
		{at: 0, n: 1, allowed: true, reset: ms},
		{at: ms - 1, n: 1, retry: 1, reset: 1},
		{at: ms, n: 1, allowed: true, reset: ms},
		{at: 2*ms - 1, n: 1, retry: 1, reset: 1},
		{at: 2 * ms, n: 0, allowed: true, remaining: 1},
		{at: 2 * ms, n: 2, remaining: 1, retry: hotlimit.Never},
		{at: 5*ms + 1, n: 1, allowed: true, reset: ms - 1},
	})
}

func TestNewRejectsOutOfRange(t *testing.T) {
	for i, tc := range []struct {
		limit  int
		window time.Duration
		want   string
	}{
		{0, time.Second, "fixedwindow: limit 0 out of range [1, 4194302]"},
		{-1, time.Second, "fixedwindow: limit -1 out of range [1, 4194302]"},
		{fixedwindow.MaxLimit + 1, time.Second, "fixedwindow: limit 4194303 out of range [1, 4194302]"},
		{math.MaxInt, time.Second, "fixedwindow: limit"},
		{math.MinInt, time.Second, "fixedwindow: limit"},
		{1, 0, "fixedwindow: window 0s out of range [1ms, 8784h0m0s]"},
		{1, -time.Second, "fixedwindow: window -1s out of range [1ms, 8784h0m0s]"},
		{1, ms - 1, "fixedwindow: window 999.999µs out of range [1ms, 8784h0m0s]"},
		{1, fixedwindow.MaxWindow + 1, "fixedwindow: window 8784h0m0.000000001s out of range [1ms, 8784h0m0s]"},
		{1, math.MaxInt64, "fixedwindow: window"},
	} {
		lim, err := fixedwindow.New(tc.limit, tc.window)
		assert.Nil(t, lim, "case %d", i)
		if assert.Error(t, err, "case %d", i) {
			assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
			assert.Contains(t, err.Error(), tc.want, "case %d", i)
		}
	}
}

func TestNewAcceptsRangeEnds(t *testing.T) {
	var now atomic.Int64
	now.Store(123456789)
	for _, limit := range []int{1, 1 << 20, fixedwindow.MaxLimit} {
		for _, window := range []time.Duration{fixedwindow.MinWindow, time.Second, fixedwindow.MaxWindow} {
			lim, err := fixedwindow.New(limit, window, hotlimit.WithClock(now.Load), nil)
			require.NoError(t, err, "limit %d window %v", limit, window)
			d := lim.Take("k", limit)
			assert.True(t, d.Allowed, "limit %d window %v", limit, window)
			assert.Zero(t, d.Remaining)
			assert.False(t, lim.Allow("k"), "limit %d window %v", limit, window)
			assert.Positive(t, lim.Take("k", 1).RetryAfter)
			assert.LessOrEqual(t, lim.Take("k", 0).ResetAfter, window)
		}
	}
}

// TestExtremeClocks runs near the ends of int64 time: nothing overflows,
// durations stay within one window, but for the last window, which ends
// past every reading: Never.
func TestExtremeClocks(t *testing.T) {
	for _, window := range []time.Duration{fixedwindow.MinWindow, 1 << 20, fixedwindow.MaxWindow} {
		for _, at := range []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, math.MaxInt64 - 1, math.MaxInt64} {
			var now atomic.Int64
			now.Store(at)
			lim, err := fixedwindow.New(2, window, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			assert.True(t, lim.Allow("k"), "window %v at %d", window, at)
			assert.True(t, lim.Take("k", 1).Allowed, "window %v at %d", window, at)
			d := lim.Take("k", 1)
			assert.False(t, d.Allowed, "window %v at %d", window, at)
			if at >= math.MaxInt64-1 { // in the last window: it ends past every reading
				assert.Equal(t, hotlimit.Never, d.RetryAfter, "window %v at %d", window, at)
			} else {
				assert.Positive(t, d.RetryAfter, "window %v at %d", window, at)
				assert.LessOrEqual(t, d.RetryAfter, window, "window %v at %d", window, at)
			}
			assert.Equal(t, d.RetryAfter, d.ResetAfter, "window %v at %d", window, at)
			assert.Equal(t, 1, lim.Sweep()+lim.Len(), "window %v at %d", window, at)
		}
	}
}

// TestWrappedIndexSaturates reads a word 2^41+1 windows after it was
// written, past the wrap-around range: the index reads as 2^41−1 windows
// ahead (a clock that stepped back), and the wait until then, longer than
// int64 nanoseconds hold, saturates at Never instead of overflowing.
func TestWrappedIndexSaturates(t *testing.T) {
	const window = 5 * ms
	var now atomic.Int64
	lim, err := fixedwindow.New(1, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	written := models.FloorDiv(math.MinInt64+1, int64(window)) + 1
	now.Store(written * int64(window))
	require.True(t, lim.Allow("k"))
	now.Store((written + 1<<41 + 1) * int64(window))
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, d.ResetAfter)
	assert.Zero(t, lim.Sweep(), "a window read as ahead is live")
	// 2^41 windows after reads as ahead too; 2^41−1 after is a new window.
	now.Store((written + 1<<41) * int64(window))
	assert.False(t, lim.Allow("k"))
	now.Store((written + 1<<41 - 1) * int64(window))
	assert.True(t, lim.Allow("k"))
}

// TestWrapSpanAtTheSmallestWindow pins the span the documentation gives for
// the window index's wrap-around at MinWindow: 2^41 windows, about 70 years.
// A key idle just short of it reads as an older window, one idle that long as
// a newer one.
func TestWrapSpanAtTheSmallestWindow(t *testing.T) {
	const year = 365.25 * 24 * float64(time.Hour)
	assert.InDelta(t, 70, float64(1<<41*fixedwindow.MinWindow)/year, 0.5)
	var now atomic.Int64
	lim, err := fixedwindow.New(1, fixedwindow.MinWindow, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	now.Store(int64((1<<41 - 1) * fixedwindow.MinWindow))
	assert.True(t, lim.Allow("k"), "2^41 − 1 windows later: a new window")
	now.Add(int64(1 << 41 * fixedwindow.MinWindow))
	assert.False(t, lim.Allow("k"), "2^41 windows later: read as a newer window")
}

func TestReportsNeverInsert(t *testing.T) {
	lim, err := fixedwindow.New(5, time.Second)
	require.NoError(t, err)
	for _, n := range []int{0, 6, -1, math.MaxInt, math.MinInt} {
		d := lim.Take("k", n)
		assert.Equal(t, n == 0, d.Allowed, "n %d", n)
		assert.Equal(t, 5, d.Remaining, "n %d", n)
		assert.Zero(t, d.ResetAfter, "n %d", n)
		if n != 0 {
			assert.Equal(t, hotlimit.Never, d.RetryAfter, "n %d", n)
		}
	}
	assert.Zero(t, lim.Len())
}

func TestZeroAllocs(t *testing.T) {
	var now atomic.Int64
	lim, err := fixedwindow.New(fixedwindow.MaxLimit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Allow("k") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 2) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 0) }))
	// Denials too, and calls crossing into new windows.
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", fixedwindow.MaxLimit) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		now.Add(int64(time.Second))
		lim.Allow("k")
	}))
}

// TestLastWindowSaysNever drains a key in the window holding math.MaxInt64,
// the last a clock can read: its end lies past every reading, so waiting
// can never let the request pass nor reset the key, and RetryAfter and
// ResetAfter say Never, not a finite wait the clock cannot reach. In the
// window before it, and after a clock step back into it, the wait is finite
// and exact.
func TestLastWindowSaysNever(t *testing.T) {
	const window = time.Second
	last := math.MaxInt64 - math.MaxInt64%int64(window) // the last window's start
	for _, at := range []int64{last, last + 1, math.MaxInt64 - 1, math.MaxInt64} {
		var now atomic.Int64
		now.Store(at)
		lim, err := fixedwindow.New(2, window, hotlimit.WithClock(now.Load))
		require.NoError(t, err)
		require.True(t, lim.Take("k", 2).Allowed, "at %d", at)
		assert.Equal(t, hotlimit.Decision{Limit: 2, RetryAfter: hotlimit.Never, ResetAfter: hotlimit.Never}, lim.Take("k", 1), "at %d", at)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 2, ResetAfter: hotlimit.Never}, lim.Take("k", 0), "at %d", at)
	}

	var now atomic.Int64
	now.Store(last - 1) // the window before: it ends at last, a reading
	lim, err := fixedwindow.New(1, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	d := lim.Take("k", 1)
	require.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 1, ResetAfter: 1}, d)
	now.Store(last)
	require.True(t, lim.Allow("k")) // now in the last window
	now.Store(last - 1)             // back: counts against the last window
	assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never, ResetAfter: hotlimit.Never}, lim.Take("k", 1))
}
