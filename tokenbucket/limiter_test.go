package tokenbucket_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

const (
	ms    = time.Millisecond
	never = hotlimit.Never
)

// step is one row of a script: at clock offset at from the limiter's epoch,
// Take(key, n) must return the Decision the other fields give.
type step struct {
	at        time.Duration
	key       string
	n         int
	allowed   bool
	remaining int
	retry     time.Duration
	reset     time.Duration
}

// runScript plays steps on a limiter of limit per window whose clock reads
// origin at New, and checks every Decision.
func runScript(t *testing.T, limit int, window time.Duration, origin int64, steps []step) {
	t.Helper()
	var now atomic.Int64
	now.Store(origin)
	lim, err := tokenbucket.New(limit, window, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	for i, s := range steps {
		now.Store(origin + int64(s.at))
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
	runScript(t, 5, time.Second, 0, []step{
		{at: 0, n: 5, allowed: true, remaining: 0, reset: time.Second},
		{at: 0, n: 1, remaining: 0, retry: 200 * ms, reset: time.Second},
		// RetryAfter is exact: 1 ns before the token, still denied.
		{at: 200*ms - 1, n: 1, remaining: 0, retry: 1, reset: 800*ms + 1},
		{at: 200 * ms, n: 1, allowed: true, remaining: 0, reset: time.Second},
		// 400 ms after the bucket emptied: exactly 2 tokens.
		{at: 600 * ms, n: 0, allowed: true, remaining: 2, reset: 600 * ms},
		{at: 600 * ms, n: 3, remaining: 2, retry: 200 * ms, reset: 600 * ms},
		{at: 600 * ms, n: 6, remaining: 2, retry: never, reset: 600 * ms}, // n > limit
		{at: 600 * ms, n: -1, remaining: 2, retry: never, reset: 600 * ms},
		{at: 600 * ms, n: 2, allowed: true, remaining: 0, reset: time.Second},
		// The clock steps back 100 ms: nothing refills until it is back at
		// 600 ms, and the bucket keeps that time.
		{at: 500 * ms, n: 1, remaining: 0, retry: 300 * ms, reset: 1100 * ms},
		{at: 500 * ms, n: 0, allowed: true, remaining: 0, reset: 1100 * ms},
		{at: 800 * ms, n: 1, allowed: true, remaining: 0, reset: time.Second},
		{at: 790 * ms, n: 1, remaining: 0, retry: 210 * ms, reset: 1010 * ms},
		// Long idle: full, and no fuller.
		{at: 5 * time.Second, n: 0, allowed: true, remaining: 5},
		{at: 5 * time.Second, n: 5, allowed: true, remaining: 0, reset: time.Second},
		// Other keys are independent; a missing key reports fresh.
		{at: 5 * time.Second, key: "other", n: 0, allowed: true, remaining: 5},
		{at: 5 * time.Second, key: "other", n: 6, remaining: 5, retry: never},
		{at: 5 * time.Second, key: "other", n: -5, remaining: 5, retry: never},
		{at: 5 * time.Second, key: "other", n: 1, allowed: true, remaining: 4, reset: 200 * ms},
	})
}

func TestScriptBeforeEpoch(t *testing.T) {
	// The clock reads 1000 s at New. A reading before that counts as the
	// epoch, and durations include the time to get back to it.
	runScript(t, 5, time.Second, int64(1000*time.Second), []step{
		{at: -300 * ms, n: 5, allowed: true, remaining: 0, reset: 1300 * ms},
		{at: -300 * ms, n: 1, remaining: 0, retry: 500 * ms, reset: 1300 * ms},
		{at: -1, n: 1, remaining: 0, retry: 200*ms + 1, reset: time.Second + 1},
		{at: 0, n: 1, remaining: 0, retry: 200 * ms, reset: time.Second},
		{at: 200 * ms, n: 1, allowed: true, remaining: 0, reset: time.Second},
	})
}

func TestScriptFractionalTokens(t *testing.T) {
	// 3 per 7 ms: a token every 2333333⅓ ns, so refill instants fall between
	// nanoseconds; RetryAfter rounds up to the first nanosecond that passes.
	const tok = 2333334
	runScript(t, 3, 7*ms, 0, []step{
		{at: 0, n: 3, allowed: true, remaining: 0, reset: 7 * ms},
		{at: 0, n: 1, remaining: 0, retry: tok, reset: 7 * ms},
		{at: tok - 1, n: 1, remaining: 0, retry: 1, reset: 7*ms - tok + 1},
		{at: tok, n: 1, allowed: true, remaining: 0, reset: 7 * ms},
		{at: tok + 7*ms - 1, n: 0, allowed: true, remaining: 2, reset: 1},
		{at: tok + 7*ms, n: 0, allowed: true, remaining: 3},
		// Refills are counted on a grid of units (2^−15 token, 71.2 ns of
		// refill) fixed at the epoch. 20 ms is not on it, so a bucket emptied
		// at 20 ms is full again 40 ns before 27 ms, and has 2 tokens 41 ns
		// before the exact model's 4666666⅔ ns: never later than the model,
		// earlier by less than one unit.
		{at: 20 * ms, n: 3, allowed: true, remaining: 0, reset: 6999960},
		{at: 20*ms + 4666625, n: 2, remaining: 1, retry: 1, reset: 2333335},
		{at: 20*ms + 4666626, n: 2, allowed: true, remaining: 0, reset: 7 * ms},
	})
}

func TestScriptHighRate(t *testing.T) {
	// 65536 per ms (F = 0: whole tokens): a token every 15.26 ns.
	runScript(t, 1<<16, ms, 0, []step{
		{at: 0, n: 1 << 16, allowed: true, remaining: 0, reset: ms},
		{at: 0, n: 1, remaining: 0, retry: 16, reset: ms},
		{at: 15, n: 1, remaining: 0, retry: 1, reset: ms - 15},
		{at: 16, n: 1, allowed: true, remaining: 0, reset: ms},
		{at: ms, n: 0, allowed: true, remaining: 1<<16 - 1, reset: 16},
		{at: ms + 16, n: 0, allowed: true, remaining: 1 << 16},
		{at: ms + 16, n: 1<<16 + 1, remaining: 1 << 16, retry: never},
	})
}

func TestScriptLongWindow(t *testing.T) {
	// 1 per day.
	const day = 24 * time.Hour
	runScript(t, 1, day, 0, []step{
		{at: 0, n: 1, allowed: true, remaining: 0, reset: day},
		{at: 12 * time.Hour, n: 1, remaining: 0, retry: 12 * time.Hour, reset: 12 * time.Hour},
		{at: day - 1, n: 1, remaining: 0, retry: 1, reset: 1},
		{at: day, n: 1, allowed: true, remaining: 0, reset: day},
		{at: day, n: 2, remaining: 0, retry: never, reset: day},
		{at: 40 * day, n: 0, allowed: true, remaining: 1},
	})
}

// TestRetryAfterIsExact: wait RetryAfter − 1 ns and the same Take is still
// denied; wait RetryAfter and it passes. At every rate, random states.
func TestRetryAfterIsExact(t *testing.T) {
	for _, cfg := range []struct {
		limit  int
		window time.Duration
	}{
		{5, time.Second}, {3, 7 * ms}, {1 << 16, ms}, {1 << 20, ms}, {1, 24 * time.Hour}, {1000, time.Minute},
	} {
		t.Run(fmt.Sprintf("limit=%d/window=%v", cfg.limit, cfg.window), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(cfg.limit), uint64(cfg.window)))
			var now atomic.Int64
			now.Store(r.Int64())
			lim, err := tokenbucket.New(cfg.limit, cfg.window, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			denied := 0
			for i := range 2000 {
				now.Add(r.Int64N(int64(cfg.window)/int64(cfg.limit)*2 + 2))
				n := 1 + r.IntN(cfg.limit)
				if r.IntN(2) == 0 {
					n = 1 + r.IntN(min(cfg.limit, 3))
				}
				d := lim.Take("k", n)
				if d.Allowed {
					assert.Zero(t, d.RetryAfter, "step %d", i)
					continue
				}
				denied++
				require.Positive(t, d.RetryAfter, "step %d", i)
				require.Less(t, d.RetryAfter, cfg.window+1, "step %d", i)
				before := now.Load()
				now.Add(int64(d.RetryAfter) - 1)
				early := lim.Take("k", n)
				assert.False(t, early.Allowed, "step %d: RetryAfter−1", i)
				assert.Equal(t, time.Duration(1), early.RetryAfter, "step %d: RetryAfter−1", i)
				now.Store(before + int64(d.RetryAfter))
				assert.True(t, lim.Take("k", n).Allowed, "step %d: RetryAfter", i)
			}
			assert.Greater(t, denied, 100)
		})
	}
}

func TestNewRejectsOutOfRange(t *testing.T) {
	for i, tc := range []struct {
		limit  int
		window time.Duration
		want   string
	}{
		{0, time.Second, "tokenbucket: limit 0 out of range [1, 1048576]"},
		{-1, time.Second, "tokenbucket: limit -1 out of range [1, 1048576]"},
		{1<<20 + 1, time.Second, "tokenbucket: limit 1048577 out of range [1, 1048576]"},
		{5, 0, "tokenbucket: window 0s out of range [1ms, 24h0m0s]"},
		{5, -time.Second, "tokenbucket: window -1s out of range [1ms, 24h0m0s]"},
		{5, ms - 1, "tokenbucket: window 999.999µs out of range [1ms, 24h0m0s]"},
		{5, 24*time.Hour + 1, "tokenbucket: window 24h0m0.000000001s out of range [1ms, 24h0m0s]"},
	} {
		lim, err := tokenbucket.New(tc.limit, tc.window)
		assert.Nil(t, lim, "case %d", i)
		require.Error(t, err, "case %d", i)
		assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
		assert.Contains(t, err.Error(), tc.want, "case %d", i)
	}
	// The corners of the accepted ranges.
	for _, limit := range []int{1, 5, 1 << 16, 1 << 20} {
		for _, window := range []time.Duration{ms, time.Second, 24 * time.Hour} {
			_, err := tokenbucket.New(limit, window)
			assert.NoError(t, err, "%d per %v", limit, window)
		}
	}
}

func TestAllowAgreesWithTake(t *testing.T) {
	var now atomic.Int64
	a, err := tokenbucket.New(7, 10*ms, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	b, err := tokenbucket.New(7, 10*ms, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		now.Add(r.Int64N(int64(3 * ms)))
		assert.Equal(t, b.Take("k", 1).Allowed, a.Allow("k"), "step %d", i)
	}
}

func TestZeroAllocs(t *testing.T) {
	var now atomic.Int64
	lim, err := tokenbucket.New(100, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Allow("k") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 1) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 0) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("missing", 0) }))
	now.Add(int64(time.Hour)) // refilled: the admitting path too
	assert.Zero(t, testing.AllocsPerRun(100, func() { now.Add(int64(time.Second)); lim.Allow("k") }))
}
