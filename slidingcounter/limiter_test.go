package slidingcounter_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
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
// Decision, and that Allow agrees with Take(key, 1) on a twin limiter fed the
// same admissions.
func runScript(t *testing.T, limit int, window time.Duration, steps []step) {
	t.Helper()
	var now atomic.Int64
	lim, err := slidingcounter.New(limit, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	twin, err := slidingcounter.New(limit, window, hotlimit.WithClock(now.Load))
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
		if s.n == 1 {
			assert.Equal(t, s.allowed, twin.Allow(key), "step %d: Allow", i)
		} else {
			twin.Take(key, s.n)
		}
	}
}

func TestScript(t *testing.T) {
	never := hotlimit.Never
	runScript(t, 10, time.Second, []step{
		// Window 0: 10 pass at 0.9 s. Reset when ⌊10·x/1s⌋ = 0 in window 1,
		// x = 1s − e < 100 ms: at e = 900 ms + 1 ns.
		{at: 900 * ms, n: 10, allowed: true, remaining: 0, reset: time.Second + 1},
		// Full for the rest of window 0 and its boundary: prev = 10 weighs 10.
		{at: 950 * ms, n: 1, remaining: 0, retry: 50*ms + 1, reset: 950*ms + 1},
		{at: 1000 * ms, n: 1, remaining: 0, retry: 1, reset: 900*ms + 1},
		// 1 ns in, prev weighs ⌊10·(1s−1ns)/1s⌋ = 9: one passes.
		{at: 1000*ms + 1, n: 1, allowed: true, remaining: 0, reset: time.Second},
		// At 1.5 s prev weighs 5, cur = 1: est 6.
		{at: 1500 * ms, n: 0, allowed: true, remaining: 4, reset: 500*ms + 1},
		// 5 more need prev's weight at 4: 1 ns later.
		{at: 1500 * ms, n: 5, remaining: 4, retry: 1, reset: 500*ms + 1},
		{at: 1500 * ms, n: 4, allowed: true, remaining: 0, reset: 1300*ms + 1},
		{at: 1500 * ms, n: 11, remaining: 0, retry: never, reset: 1300*ms + 1}, // n > limit
		{at: 1500 * ms, n: -1, remaining: 0, retry: never, reset: 1300*ms + 1},
		// The clock steps back into window 0: weighed at window 1's start,
		// est = 10 + 5 > limit. The request passes where it would at 1.5 s + 1 ns.
		{at: 800 * ms, n: 1, remaining: 0, retry: 700*ms + 1, reset: 2*time.Second + 1},
		// Window 2: prev = 5, cur = 0.
		{at: 2000 * ms, n: 0, allowed: true, remaining: 5, reset: 800*ms + 1},
		// 6 more need prev's weight at 4: ⌊5·(1s−1ns)/1s⌋ = 4, 1 ns later.
		{at: 2000 * ms, n: 6, remaining: 5, retry: 1, reset: 800*ms + 1},
		// Two windows later both counts are zero.
		{at: 4000 * ms, n: 10, allowed: true, remaining: 0, reset: 1900*ms + 1},
		// Other keys are independent; reporting a missing key shows it fresh.
		{at: 4000 * ms, key: "other", n: 0, allowed: true, remaining: 10},
		{at: 4000 * ms, key: "other", n: 11, remaining: 10, retry: never},
		{at: 4000 * ms, key: "other", n: -5, remaining: 10, retry: never},
		{at: 4000 * ms, key: "other", n: 1, allowed: true, remaining: 9, reset: time.Second + 1},
	})
}

func TestScriptNegativeClock(t *testing.T) {
	runScript(t, 2, 10*ms, []step{
		// A new key at a negative clock counts in its own window, -2
		// ([-20ms, -10ms)), not in window 0 of the zero word.
		{at: -15 * ms, n: 1, allowed: true, remaining: 1, reset: 5*ms + 1},
		{at: -10*ms - 1, n: 1, allowed: true, remaining: 0, reset: 5*ms + 2},
		// Window -1: prev = 2 weighs ⌊2·x/10ms⌋, 0 once x < 5 ms.
		{at: -10 * ms, n: 2, remaining: 0, retry: 5*ms + 1, reset: 5*ms + 1},
		{at: -5*ms + 1, n: 2, allowed: true, remaining: 0, reset: 10 * ms},
		{at: 0, n: 1, remaining: 0, retry: 1, reset: 5*ms + 1},
		// Back to window -3: counts against window -1 at its start, est 4.
		{at: -25 * ms, n: 0, allowed: true, remaining: 0, reset: 30*ms + 1},
		// Passes where it would at 0 + 1 ns: in window 0, prev weighs 1.
		{at: -25 * ms, n: 1, remaining: 0, retry: 25*ms + 1, reset: 30*ms + 1},
		{at: 1, n: 1, allowed: true, remaining: 0, reset: 10 * ms},
	})
}

func TestScriptWindowEdges(t *testing.T) {
	// Limit 1 per 1 ms: every boundary, to the nanosecond.
	runScript(t, 1, ms, []step{
		{at: 0, n: 1, allowed: true, reset: ms + 1},
		{at: ms - 1, n: 1, retry: 2, reset: 2},
		{at: ms, n: 1, retry: 1, reset: 1},
		{at: ms + 1, n: 1, allowed: true, reset: ms},
		{at: 3*ms + 1, n: 0, allowed: true, remaining: 1},
		{at: 3*ms + 1, n: 2, remaining: 1, retry: hotlimit.Never},
	})
}

// TestWorstCaseBurst pins the tight end of the error bound: Limit in the last
// nanosecond of a window and Limit more 2 ns before the end of the next all
// pass, 2·Limit within one Window.
func TestWorstCaseBurst(t *testing.T) {
	const limit = 100
	var now atomic.Int64
	lim, err := slidingcounter.New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(int64(time.Second - 1))
	require.True(t, lim.Take("k", limit).Allowed)
	now.Store(int64(2*time.Second - 2))
	assert.True(t, lim.Take("k", limit).Allowed, "⌊100·2ns/1s⌋ = 0")
	assert.Less(t, now.Load()-int64(time.Second-1), int64(time.Second), "all within one Window")
	assert.False(t, lim.Allow("k"), "window 1 is full")
}

func TestNewRejectsOutOfRange(t *testing.T) {
	for i, tc := range []struct {
		limit  int
		window time.Duration
		want   string
	}{
		{0, time.Second, "slidingcounter: limit 0 out of range [1, 131070]"},
		{-1, time.Second, "slidingcounter: limit -1 out of range [1, 131070]"},
		{slidingcounter.MaxLimit + 1, time.Second, "slidingcounter: limit 131071 out of range [1, 131070]"},
		{math.MaxInt, time.Second, "slidingcounter: limit"},
		{math.MinInt, time.Second, "slidingcounter: limit"},
		{1, 0, "slidingcounter: window 0s out of range [1ms, 8784h0m0s]"},
		{1, -time.Second, "slidingcounter: window -1s out of range [1ms, 8784h0m0s]"},
		{1, ms - 1, "slidingcounter: window 999.999µs out of range [1ms, 8784h0m0s]"},
		{1, slidingcounter.MaxWindow + 1, "slidingcounter: window 8784h0m0.000000001s out of range [1ms, 8784h0m0s]"},
		{1, math.MaxInt64, "slidingcounter: window"},
	} {
		lim, err := slidingcounter.New(tc.limit, tc.window)
		assert.Nil(t, lim, "case %d", i)
		if assert.Error(t, err, "case %d", i) {
			assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
			assert.Contains(t, err.Error(), tc.want, "case %d", i)
		}
	}
}

func TestNewAcceptsRangeEnds(t *testing.T) {
	assert.GreaterOrEqual(t, slidingcounter.MaxLimit, 1<<16)
	var now atomic.Int64
	now.Store(123456789)
	for _, limit := range []int{1, 1 << 16, slidingcounter.MaxLimit} {
		for _, window := range []time.Duration{slidingcounter.MinWindow, time.Second, slidingcounter.MaxWindow} {
			lim, err := slidingcounter.New(limit, window, hotlimit.WithClock(now.Load), nil)
			require.NoError(t, err, "limit %d window %v", limit, window)
			d := lim.Take("k", limit)
			assert.True(t, d.Allowed, "limit %d window %v", limit, window)
			assert.Zero(t, d.Remaining)
			assert.False(t, lim.Allow("k"), "limit %d window %v", limit, window)
			assert.Positive(t, lim.Take("k", 1).RetryAfter)
			assert.LessOrEqual(t, lim.Take("k", 0).ResetAfter, 2*window)
		}
	}
}

// TestExtremeClocks runs near the ends of int64 time: nothing overflows,
// durations stay within two windows, and a wait that would end past
// math.MaxInt64, which no clock reads, is Never.
func TestExtremeClocks(t *testing.T) {
	for _, window := range []time.Duration{slidingcounter.MinWindow, 1 << 20, slidingcounter.MaxWindow} {
		for _, at := range []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, math.MaxInt64 - 1, math.MaxInt64} {
			var now atomic.Int64
			now.Store(at)
			lim, err := slidingcounter.New(2, window, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			assert.True(t, lim.Allow("k"), "window %v at %d", window, at)
			assert.True(t, lim.Take("k", 1).Allowed, "window %v at %d", window, at)
			d := lim.Take("k", 1)
			assert.False(t, d.Allowed, "window %v at %d", window, at)
			assert.Positive(t, d.RetryAfter, "window %v at %d", window, at)
			assert.LessOrEqual(t, d.RetryAfter, d.ResetAfter, "window %v at %d", window, at)
			for _, wait := range []time.Duration{d.RetryAfter, d.ResetAfter} {
				if wait == hotlimit.Never {
					assert.Greater(t, at, int64(math.MaxInt64-2*window), "Never only where two windows pass the clock's end: window %v at %d", window, at)
					continue
				}
				assert.LessOrEqual(t, wait, 2*window, "window %v at %d", window, at)
				assert.LessOrEqual(t, at, math.MaxInt64-int64(wait), "the wait ends at a reading a clock makes: window %v at %d", window, at)
			}
			assert.Equal(t, 1, lim.Sweep()+lim.Len(), "window %v at %d", window, at)
		}
	}
}

// TestWrappedIndexSaturates reads a word 2^29+1 windows after it was written,
// past the wrap-around range: the index reads as 2^29−1 windows ahead (a
// clock that stepped back), and the wait until then, longer than int64
// nanoseconds hold, saturates at Never instead of overflowing.
func TestWrappedIndexSaturates(t *testing.T) {
	const window = time.Duration(1<<34 + 1<<33) // 2^64/Window > 2^29 + 2 windows fit in int64
	var now atomic.Int64
	lim, err := slidingcounter.New(1, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	written := models.FloorDiv(math.MinInt64, int64(window)) + 1
	now.Store(written * int64(window))
	require.True(t, lim.Allow("k"))
	now.Store((written + 1<<29 + 1) * int64(window))
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, d.ResetAfter)
	assert.Zero(t, lim.Sweep(), "a window read as ahead is live")
	// 2^29 windows after reads as ahead too; 2^29−1 after is a new window.
	now.Store((written + 1<<29) * int64(window))
	assert.False(t, lim.Allow("k"))
	now.Store((written + 1<<29 - 1) * int64(window))
	assert.True(t, lim.Allow("k"))
}

func TestReportsNeverInsert(t *testing.T) {
	lim, err := slidingcounter.New(5, time.Second)
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
	lim, err := slidingcounter.New(slidingcounter.MaxLimit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Allow("k") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 2) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 0) }))
	// Denials too, and calls crossing into new windows.
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", slidingcounter.MaxLimit) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		now.Add(int64(700 * ms))
		lim.Allow("k")
		lim.Take("k", 3)
	}))
}
