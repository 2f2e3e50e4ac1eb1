package gcra_test

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

const ms = time.Millisecond

// step is one row of a script: at clock at, Take(key, n) must return want.
type step struct {
	at        time.Duration // the clock, from its origin (the epoch is 0)
	n         int
	allowed   bool
	remaining int
	retry     time.Duration
	reset     time.Duration
}

// runScript plays steps on a limiter of limit per window with burst and
// checks every Decision.
func runScript(t *testing.T, limit, burst int, window time.Duration, steps []step) {
	t.Helper()
	var now atomic.Int64
	lim, err := gcra.New(limit, window, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst))
	require.NoError(t, err)
	for i, s := range steps {
		now.Store(int64(s.at))
		want := hotlimit.Decision{
			Allowed: s.allowed, Limit: limit, Remaining: s.remaining,
			RetryAfter: s.retry, ResetAfter: s.reset,
		}
		assert.Equal(t, want, lim.Take("k", s.n), "step %d", i)
	}
}

// TestScriptBurst: 5 per second with a burst of 7: YYYYYYYN at once, then
// one per 200 ms; 400 ms after draining, exactly 2 pass.
func TestScriptBurst(t *testing.T) {
	never := hotlimit.Never
	runScript(t, 5, 7, time.Second, []step{
		{at: 0, n: 0, allowed: true, remaining: 7},
		{at: 0, n: 1, allowed: true, remaining: 6, reset: 200 * ms},
		{at: 0, n: 1, allowed: true, remaining: 5, reset: 400 * ms},
		{at: 0, n: 1, allowed: true, remaining: 4, reset: 600 * ms},
		{at: 0, n: 1, allowed: true, remaining: 3, reset: 800 * ms},
		{at: 0, n: 1, allowed: true, remaining: 2, reset: time.Second},
		{at: 0, n: 1, allowed: true, remaining: 1, reset: 1200 * ms},
		{at: 0, n: 1, allowed: true, remaining: 0, reset: 1400 * ms},
		{at: 0, n: 1, retry: 200 * ms, reset: 1400 * ms},
		{at: 0, n: 8, retry: never, reset: 1400 * ms}, // n > burst
		{at: 0, n: -1, retry: never, reset: 1400 * ms},
		// 400 ms later: exactly 2 pass.
		{at: 400 * ms, n: 1, allowed: true, remaining: 1, reset: 1200 * ms},
		{at: 400 * ms, n: 1, allowed: true, remaining: 0, reset: 1400 * ms},
		{at: 400 * ms, n: 1, retry: 200 * ms, reset: 1400 * ms},
		// RetryAfter is exact: 1 ns before, still denied.
		{at: 600*ms - 1, n: 1, retry: 1, reset: 1200*ms + 1},
		{at: 600 * ms, n: 3, remaining: 1, retry: 400 * ms, reset: 1200 * ms},
		{at: 1000 * ms, n: 3, allowed: true, remaining: 0, reset: 1400 * ms},
		// The clock steps back 100 ms: no refill, the key looks emptier.
		{at: 900 * ms, n: 0, allowed: true, remaining: 0, reset: 1500 * ms},
		{at: 900 * ms, n: 1, retry: 300 * ms, reset: 1500 * ms},
		// Idle past the burst's refill: full again, as a fresh key.
		{at: 10 * time.Second, n: 0, allowed: true, remaining: 7},
		{at: 10 * time.Second, n: 7, allowed: true, remaining: 0, reset: 1400 * ms},
	})
}

// TestScriptDefaultBurst: with no burst, the token bucket's example: 5 per
// second, YYYYYN at once, +400 ms YYN.
func TestScriptDefaultBurst(t *testing.T) {
	var now atomic.Int64
	lim, err := gcra.New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	got := ""
	for range 6 {
		got += yn(lim.Allow("k"))
	}
	assert.Equal(t, "YYYYYN", got)
	now.Store(int64(400 * ms))
	got = ""
	for range 3 {
		got += yn(lim.Allow("k"))
	}
	assert.Equal(t, "YYN", got)
}

func yn(ok bool) string {
	if ok {
		return "Y"
	}
	return "N"
}

// TestScriptThirds: 3 per second, T = 333333333⅓ ns, kept exact: the third
// token is back exactly 1 s after draining, not a nanosecond later.
func TestScriptThirds(t *testing.T) {
	runScript(t, 3, 0, time.Second, []step{
		{at: 0, n: 3, allowed: true, remaining: 0, reset: time.Second},
		{at: 0, n: 1, retry: 333333334, reset: time.Second},
		{at: 333333333, n: 1, retry: 1, reset: 666666667},
		{at: 333333334, n: 1, allowed: true, remaining: 0, reset: time.Second},
		{at: time.Second - 1, n: 2, remaining: 1, retry: 1, reset: 333333335}, // 1.999999997 tokens
		{at: time.Second, n: 2, allowed: true, remaining: 0, reset: time.Second},
		{at: 2 * time.Second, n: 0, allowed: true, remaining: 3},
	})
}

// TestScriptBeforeEpoch: a clock before the epoch (the reading at New) counts
// as the epoch, and RetryAfter includes the wait back to it.
func TestScriptBeforeEpoch(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Second))
	lim, err := gcra.New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(int64(500 * ms))
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: 1500 * ms}, lim.Take("k", 1))
	assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 1500 * ms, ResetAfter: 1500 * ms}, lim.Take("k", 1))
	now.Store(int64(2*time.Second - 1))
	assert.False(t, lim.Allow("k"))
	now.Store(int64(2 * time.Second))
	assert.True(t, lim.Allow("k"))
}

func TestNewRejectsOutOfRange(t *testing.T) {
	for i, tc := range []struct {
		limit  int
		window time.Duration
		burst  int
		want   string
	}{
		{0, time.Second, 0, "gcra: limit 0 out of range [1, 1048576]"},
		{-1, time.Second, 0, "gcra: limit -1 out of range [1, 1048576]"},
		{gcra.MaxLimit + 1, time.Second, 0, "gcra: limit 1048577 out of range [1, 1048576]"},
		{math.MaxInt, time.Second, 0, "gcra: limit"},
		{math.MinInt, time.Second, 0, "gcra: limit"},
		{1, 0, 0, "gcra: window 0s out of range [1ms, 24h0m0s]"},
		{1, -time.Second, 0, "gcra: window -1s out of range [1ms, 24h0m0s]"},
		{1, ms - 1, 0, "gcra: window 999.999µs out of range [1ms, 24h0m0s]"},
		{1, gcra.MaxWindow + 1, 0, "gcra: window 24h0m0.000000001s out of range [1ms, 24h0m0s]"},
		{1, math.MaxInt64, 0, "gcra: window"},
		{1, time.Second, gcra.MaxBurst + 1, "gcra: burst 1048577 out of range [1, 1048576]"},
		{1, time.Second, math.MaxInt, "gcra: burst"},
		{1, time.Second, -1, "gcra: burst -1 out of range [1, 1048576], or 0 for the limit"}, // not the limit
		{1, time.Second, math.MinInt, "gcra: burst"},
		{1, 24 * time.Hour, 367, "gcra: burst 367 of limit 1 per 24h0m0s takes longer than 8784h0m0s to refill; burst must lie in [1, 366]"},
		{10, time.Hour, 87841, "burst must lie in [1, 87840]"},
	} {
		lim, err := gcra.New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst))
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
	for _, limit := range []int{1, 3, 1048573, gcra.MaxLimit} {
		for _, window := range []time.Duration{gcra.MinWindow, time.Second, gcra.MaxWindow} {
			for _, burst := range []int{0, 1, 366, gcra.MaxBurst} {
				lim, err := gcra.New(limit, window, hotlimit.WithClock(now.Load), hotlimit.WithBurst(burst), nil)
				if burst == gcra.MaxBurst && limit < 3000 && window == gcra.MaxWindow { // refill > 366 days
					require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
					continue
				}
				require.NoError(t, err, "limit %d window %v burst %d", limit, window, burst)
				b := burst
				if b == 0 {
					b = limit
				}
				d := lim.Take("k", b)
				assert.True(t, d.Allowed, "limit %d window %v burst %d", limit, window, burst)
				assert.Zero(t, d.Remaining)
				assert.Equal(t, limit, d.Limit)
				assert.False(t, lim.Allow("k"))
				d = lim.Take("k", 1)
				assert.Positive(t, d.RetryAfter)
				assert.LessOrEqual(t, d.RetryAfter, window/time.Duration(limit)+1)
				assert.LessOrEqual(t, d.ResetAfter, gcra.MaxBurstSpan+1)
			}
		}
	}
}

// TestExtremeClocks runs at the ends of int64 time: the epoch anchors it, and
// a clock far before the epoch saturates RetryAfter at Never.
func TestExtremeClocks(t *testing.T) {
	limitertest.BucketAtExtremeEpochs(t, limitertest.Adapt(gcra.New))
}

// TestTimeStops: past the limiter's horizon its time stands still, so a
// drained key never refills; nothing overflows.
func TestTimeStops(t *testing.T) {
	var now atomic.Int64
	lim, err := gcra.New(1, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(math.MaxInt64)
	assert.True(t, lim.Allow("k"))
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, d.ResetAfter)
}

func TestReportsNeverInsert(t *testing.T) {
	lim, err := gcra.New(5, time.Second, hotlimit.WithBurst(3))
	require.NoError(t, err)
	for _, n := range []int{0, 4, -1, math.MaxInt, math.MinInt} {
		d := lim.Take("k", n)
		assert.Equal(t, n == 0, d.Allowed, "n %d", n)
		assert.Equal(t, 5, d.Limit, "n %d", n)
		assert.Equal(t, 3, d.Remaining, "n %d", n)
		assert.Zero(t, d.ResetAfter, "n %d", n)
		if n != 0 {
			assert.Equal(t, hotlimit.Never, d.RetryAfter, "n %d", n)
		}
	}
	assert.Zero(t, lim.Len())
}

func TestZeroAllocs(t *testing.T) {
	var now atomic.Int64
	lim, err := gcra.New(gcra.MaxLimit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Allow("k") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 2) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 0) }))
	// Denials too, and a moving clock.
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", gcra.MaxLimit) }))
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		now.Add(int64(ms))
		lim.Allow("k")
	}))
}
