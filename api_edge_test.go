package hotlimit_test

import (
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// refundingLimiter is a keyed limiter of this module that gives back what
// it took.
type refundingLimiter interface {
	hotlimit.Refunder
	Len() int
	Sweep() int
}

// edgeAlgorithms builds every limiter of this module from a limit, a window
// and options; "composite" is a token bucket and a sliding log of the same
// policy.
var edgeAlgorithms = []struct {
	name string
	new  func(limit int, window time.Duration, opts ...hotlimit.Option) (refundingLimiter, error)
}{
	{"tokenbucket", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		return tokenbucket.New(l, w, o...)
	}},
	{"gcra", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		return gcra.New(l, w, o...)
	}},
	{"fixedwindow", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		return fixedwindow.New(l, w, o...)
	}},
	{"slidingcounter", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		return slidingcounter.New(l, w, o...)
	}},
	{"slidinglog", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		return slidinglog.New(l, w, o...)
	}},
	{"composite", func(l int, w time.Duration, o ...hotlimit.Option) (refundingLimiter, error) {
		a, err := tokenbucket.New(l, w, o...)
		if err != nil {
			return nil, err
		}
		b, err := slidinglog.New(l, w, o...)
		if err != nil {
			return nil, err
		}
		return composite.New(a, b)
	}},
}

// TestEveryLimiterSurvivesExtremeInput runs every limiter through one table
// of hostile input: limits, windows and bursts at and beyond their ranges'
// ends, odd combinations of options, clocks anywhere on the int64 line
// (forward, back, to either end), counts from math.MinInt to math.MaxInt,
// the empty key, keys that differ by a NUL byte and a 64 KB key, and
// refunds of receipts made up, refunded twice or meant for another key.
// A constructor refuses what it cannot take with an error that wraps
// ErrInvalidConfig and names the field; nothing panics; every Decision keeps
// the rules all Decisions keep (limitertest.Problem); an allowed Take of n
// gives a receipt of n; and after any refunds a key holds at most its full
// quota, and passes no more than that at one instant.
func TestEveryLimiterSurvivesExtremeInput(t *testing.T) {
	limits := []int{math.MinInt, 0, 1, 3, 1<<16 + 1, math.MaxInt}
	windows := []time.Duration{math.MinInt64, 0, 1, time.Millisecond, time.Second, math.MaxInt64}
	readings := []int64{math.MinInt64, -1, 0, 1 << 40, math.MaxInt64}
	counts := []int{math.MinInt, -1, 0, 1, 2, 4, 1 << 20, math.MaxInt}
	keys := []string{"", "\x00", "k", "k\x00", strings.Repeat("k", 1<<16)}
	options := map[string][]hotlimit.Option{
		"none":                nil,
		"maxkeys=1":           {hotlimit.WithMaxKeys(1)},
		"maxkeys=1+sweep=1":   {hotlimit.WithMaxKeys(1), hotlimit.WithAutoSweep(1)},
		"maxkeys=-1+sweep=-1": {hotlimit.WithMaxKeys(-1), hotlimit.WithAutoSweep(-1)},
		"burst=1":             {hotlimit.WithBurst(1)},
		"burst=5":             {hotlimit.WithBurst(5)},
		"burst=-5":            {hotlimit.WithBurst(-5)},
		"burst=max":           {hotlimit.WithBurst(math.MaxInt)},
	}
	built := 0
	for _, alg := range edgeAlgorithms {
		for oname, opts := range options {
			for _, limit := range limits {
				for _, window := range windows {
					name := fmt.Sprintf("%s/%s/limit=%d/window=%d", alg.name, oname, limit, window)
					var now atomic.Int64
					lim, err := alg.new(limit, window, append([]hotlimit.Option{hotlimit.WithClock(now.Load)}, opts...)...)
					if err != nil {
						require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, name)
						msg := err.Error()
						assert.True(t, strings.Contains(msg, "limit") || strings.Contains(msg, "window") || strings.Contains(msg, "burst"),
							"%s: %q names no field", name, msg)
						continue
					}
					built++
					capacity := limit
					if b := hotlimit.NewOptions(opts...).Burst; b > 0 && (alg.name == "tokenbucket" || alg.name == "gcra") {
						capacity = b
					}
					var receipts []hotlimit.Receipt
					for _, at := range readings {
						now.Store(at)
						for _, key := range keys {
							for _, n := range counts {
								d, r := lim.TakeReceipt(key, n)
								require.Empty(t, limitertest.Problem(d, n), "%s: Take(%.8q, %d) at %d: %+v", name, key, n, at, d)
								if d.Allowed && n > 0 {
									require.Equal(t, n, r.N, "%s: Take(%.8q, %d) at %d: %+v", name, key, n, at, d)
								} else {
									require.Zero(t, r, "%s: Take(%.8q, %d) at %d: %+v", name, key, n, at, d)
								}
								receipts = append(receipts, r)
							}
						}
						lim.Sweep()
					}
					for _, r := range receipts {
						for _, key := range keys[:3] {
							for _, made := range []hotlimit.Receipt{r, r, {N: math.MaxInt, At: r.At}, {N: -1, At: r.At},
								{N: 1, At: math.MinInt64}, {N: math.MaxInt, At: math.MaxInt64}} {
								lim.Refund(key, made)
							}
						}
					}
					for _, key := range keys[:3] {
						d := lim.Take(key, 0)
						require.Empty(t, limitertest.Problem(d, 0), "%s: Take(%q, 0) after refunds: %+v", name, key, d)
						assert.LessOrEqual(t, d.Remaining, capacity, "%s: Take(%q, 0) after refunds: %+v", name, key, d)
						passed := 0
						for passed <= capacity && lim.Allow(key) {
							passed++
						}
						assert.LessOrEqual(t, passed, capacity, "%s: %q after refunds", name, key)
					}
				}
			}
		}
	}
	// The table must build limiters, not only refuse policies: 3 limits
	// (1, 3, 2^16+1) by 2 windows (1ms, 1s), less what ranges and bursts
	// refuse.
	assert.Greater(t, built, 100, "limiters built")
}

// TestReportsNeverInsertNorChange: Take(key, 0), Take(key, n over the burst)
// and Take(key, n < 0) only report, as every algorithm's package says: a
// key not held is not inserted, and a held one, part spent, reads the same
// after each, to the nanosecond.
func TestReportsNeverInsertNorChange(t *testing.T) {
	for _, alg := range edgeAlgorithms {
		t.Run(alg.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			lim, err := alg.new(5, time.Second, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			require.True(t, lim.Take("held", 2).Allowed)
			now.Add(int64(100 * time.Millisecond))
			held := lim.Take("held", 0)
			require.True(t, held.Allowed)
			require.Less(t, held.Remaining, 5, "part spent")
			keys := lim.Len() // one per child, for a composite
			fresh := lim.Take("new", 0)
			for _, n := range []int{0, 6, -1, math.MaxInt, math.MinInt} {
				d := lim.Take("new", n)
				assert.Equal(t, n == 0, d.Allowed, "n %d", n)
				assert.Equal(t, fresh.Remaining, d.Remaining, "n %d", n)
				assert.Zero(t, d.ResetAfter, "n %d", n)
				if n != 0 {
					assert.Equal(t, hotlimit.Never, d.RetryAfter, "n %d", n)
					assert.Equal(t, hotlimit.Decision{Limit: 5, Remaining: held.Remaining, RetryAfter: hotlimit.Never, ResetAfter: held.ResetAfter},
						lim.Take("held", n), "n %d", n)
				}
				assert.Equal(t, held, lim.Take("held", 0), "n %d: the held key is unchanged", n)
			}
			assert.Equal(t, keys, lim.Len(), "no key inserted")
		})
	}
}
