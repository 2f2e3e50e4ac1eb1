package hotlimit_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/hotlimit/hotlimit/unlimited"
)

// TestBadInputToFieldError: a FieldError made by hand with a nil Err, the
// zero one included, panicked in Error on the nil Err, where fmt, a log
// line or errors.Is would read it. It now reads as one whose Err is
// ErrInvalidConfig, as every FieldError the package makes wraps it.
func TestBadInputToFieldError(t *testing.T) {
	cases := []struct {
		name string
		e    *hotlimit.FieldError
		want string
	}{
		{"zero", &hotlimit.FieldError{}, "hotlimit: Config field : invalid config"},
		{"nil Err", &hotlimit.FieldError{Field: "window"}, "hotlimit: Config field window: invalid config"},
		{"with Err", &hotlimit.FieldError{Field: "limit", Err: hotlimit.ErrNeverPasses}, "hotlimit: Config field limit: the request can never pass"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NotPanics(t, func() { _ = tc.e.Error() })
			assert.EqualError(t, tc.e, tc.want)
			if tc.e.Err == nil {
				assert.ErrorIs(t, tc.e, hotlimit.ErrInvalidConfig)
			}
		})
	}
}

// TestBadInputToTheRootPackage calls the functions and methods of package
// hotlimit with what a careless caller could give them: nil contexts,
// limiters, functions and options, typed nils, out-of-range values of
// every enum, counts and durations at the ends of their types, invalid
// UTF-8 and JSON. Each gets its documented answer and nothing panics.
func TestBadInputToTheRootPackage(t *testing.T) {
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"Wait on a nil Limiter is refused", func(t *testing.T) {
			assert.ErrorIs(t, hotlimit.Wait(ctx, nil, "k"), hotlimit.ErrInvalidConfig)
			assert.ErrorIs(t, hotlimit.Wait(ctx, (*tokenbucket.Limiter)(nil), "k"), hotlimit.ErrInvalidConfig)
		}},
		{"Wait with a nil Context is refused", func(t *testing.T) {
			assert.ErrorIs(t, hotlimit.Wait(nil, &unlimited.Limiter{}, "k"), hotlimit.ErrInvalidConfig) //lint:ignore SA1012 a nil context is what is tested
		}},
		{"WaitN of a negative count never passes", func(t *testing.T) {
			for _, n := range []int{math.MinInt, -1} {
				assert.ErrorIs(t, hotlimit.WaitN(ctx, &unlimited.Limiter{}, "k", n), hotlimit.ErrNeverPasses, "n=%d", n)
			}
		}},
		{"WaitN beyond the limit never passes", func(t *testing.T) {
			l, err := tokenbucket.New(1, time.Second)
			require.NoError(t, err)
			assert.ErrorIs(t, hotlimit.WaitN(ctx, l, "\xff", math.MaxInt), hotlimit.ErrNeverPasses)
		}},
		{"WaitN of 0 returns at once; canceled, ctx.Err()", func(t *testing.T) {
			assert.NoError(t, hotlimit.WaitN(ctx, &unlimited.Limiter{}, "", 0))
			assert.ErrorIs(t, hotlimit.WaitN(canceled, &unlimited.Limiter{}, "", 0), context.Canceled)
			assert.ErrorIs(t, hotlimit.WaitN(canceled, &unlimited.Limiter{}, "", math.MinInt), context.Canceled)
		}},
		{"Wait with a nil option or sleep keeps the default", func(t *testing.T) {
			assert.NoError(t, hotlimit.Wait(ctx, &unlimited.Limiter{}, strings.Repeat("k", 1<<16), nil, hotlimit.WithSleep(nil)))
		}},
		{"CheckObserver and Observers of nils", func(t *testing.T) {
			assert.NoError(t, hotlimit.CheckObserver(nil))
			assert.NoError(t, hotlimit.CheckObserver(hotlimit.ObserverFunc(nil)))
			assert.Nil(t, hotlimit.Observers())
			assert.Nil(t, hotlimit.Observers(nil, hotlimit.ObserverFunc(nil)))
		}},
		{"a nil ObserverFunc panics when called, as its doc says", func(t *testing.T) {
			assert.Panics(t, func() { hotlimit.ObserverFunc(nil).Observe(hotlimit.Event{}) })
		}},
		{"NewOptions skips nil options and keeps the last of each", func(t *testing.T) {
			o := hotlimit.NewOptions(nil, hotlimit.WithBurst(3), hotlimit.WithBurst(0), hotlimit.WithNearLimit(0.5), hotlimit.WithNearLimit(math.NaN()),
				hotlimit.WithClock(nil), hotlimit.WithFactory(nil), hotlimit.WithObserver(nil))
			assert.Zero(t, o.Burst)
			assert.Equal(t, 0.5, o.NearLimit, "NaN changes nothing")
			assert.NotNil(t, o.Clock, "a nil clock is the monotonic clock")
			assert.Nil(t, o.Observer)
			assert.Equal(t, 1.0, hotlimit.NewOptions(hotlimit.WithNearLimit(math.Inf(1))).NearLimit, "clamped")
			assert.Equal(t, 0.0, hotlimit.NewOptions(hotlimit.WithNearLimit(math.Inf(-1))).NearLimit, "clamped")
		}},
		{"RejectBurst names the package and limit", func(t *testing.T) {
			assert.ErrorIs(t, hotlimit.NewOptions(hotlimit.WithBurst(3)).RejectBurst("x", math.MinInt), hotlimit.ErrInvalidConfig)
			assert.NoError(t, hotlimit.NewOptions().RejectBurst("", 0))
		}},
		{"Classify of nonsense", func(t *testing.T) {
			assert.Equal(t, hotlimit.OutcomeDenied, hotlimit.Classify(hotlimit.Decision{Limit: math.MinInt, Remaining: math.MaxInt}, false, math.NaN()))
			assert.Equal(t, hotlimit.OutcomeNearLimit, hotlimit.ClassifyCapacity(hotlimit.Decision{Allowed: true, Remaining: math.MinInt}, false, -1, 0))
			assert.Equal(t, hotlimit.OutcomeDenied, hotlimit.ClassifyCapacity(hotlimit.Decision{Remaining: math.MaxInt}, false, math.Inf(1), math.MinInt))
			assert.Equal(t, "unknown", hotlimit.Outcome(255).String())
		}},
		{"an Algorithm out of range", func(t *testing.T) {
			a := hotlimit.Algorithm(255)
			assert.False(t, a.Valid())
			assert.False(t, a.HasBurst())
			assert.Zero(t, a.Range())
			assert.Equal(t, "Algorithm(255)", a.String())
			_, err := a.MarshalText()
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			var b hotlimit.Algorithm
			for _, text := range [][]byte{nil, {}, []byte("\xff"), []byte(strings.Repeat("a", 1<<16))} {
				assert.ErrorIs(t, b.UnmarshalText(text), hotlimit.ErrInvalidConfig)
			}
			assert.Zero(t, b, "unchanged on error")
		}},
		{"a Scope out of range", func(t *testing.T) {
			s := hotlimit.Scope(255)
			assert.False(t, s.Valid())
			assert.Equal(t, "Scope(255)", s.String())
			_, err := s.MarshalText()
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			var b hotlimit.Scope
			assert.ErrorIs(t, b.UnmarshalText([]byte("\xff")), hotlimit.ErrInvalidConfig)
		}},
		{"a Config at the ends of its fields", func(t *testing.T) {
			for _, c := range []hotlimit.Config{{}, {Algorithm: 200, Limit: math.MinInt, Window: math.MinInt64, Burst: math.MinInt, Scope: 200},
				{Algorithm: hotlimit.TokenBucket, Limit: math.MaxInt, Window: math.MaxInt64, Burst: math.MaxInt}} {
				assert.ErrorIs(t, c.Validate(), hotlimit.ErrInvalidConfig, "%v", c)
				_ = c.String()
				_ = c.Capacity()
				_, _ = c.MarshalJSON()
			}
		}},
		{"Config.UnmarshalJSON of junk", func(t *testing.T) {
			var c hotlimit.Config
			for _, data := range []string{"", "null", "\xff", "[]", "1", `{"limit":1e400}`, `{"algorithm":"TokenBucket","limit":1,"window":"-9223372036854775809ns"}`,
				`{"algorithm":"TokenBucket","limit":1,"window":"9999999999h"}`, `{"algorithm":"TokenBucket","limit":-1,"window":"1s","burst":-9223372036854775809}`} {
				assert.ErrorIs(t, c.UnmarshalJSON([]byte(data)), hotlimit.ErrInvalidConfig, "%q", data)
			}
			assert.Zero(t, c, "unchanged on error")
		}},
		{"a zero CoarseClock is ready; Start and Stop twice", func(t *testing.T) {
			var c hotlimit.CoarseClock
			assert.Equal(t, 50*time.Microsecond, c.Resolution())
			c.Stop()
			c.Start()
			c.Start()
			a := c.Now()
			c.Stop()
			c.Stop()
			assert.GreaterOrEqual(t, c.Now(), a)
		}},
		{"NewCoarseClock at the ends of a Duration", func(t *testing.T) {
			assert.Equal(t, 50*time.Microsecond, hotlimit.NewCoarseClock(math.MinInt64).Resolution())
			c := hotlimit.NewCoarseClock(math.MaxInt64)
			c.Start()
			c.Stop()
			assert.Equal(t, time.Duration(math.MaxInt64), c.Resolution())
		}},
		{"a nil CoarseClock panics, as its doc says", func(t *testing.T) {
			var c *hotlimit.CoarseClock
			assert.Panics(t, func() { c.Now() })
		}},
		{"an Event without a Source has no rule name", func(t *testing.T) {
			assert.Empty(t, hotlimit.Event{}.RuleName())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.NotPanics(t, func() { tc.check(t) }) })
	}
}

// madeLimiter is the method set of this module's in-memory limiters.
type madeLimiter interface {
	hotlimit.Refunder
	Len() int
	Sweep() int
	Burst() int
}

// TestBadInputToALimiterNewDidNotMake: the zero Limiter of each in-memory
// algorithm, and a nil *Limiter, are not usable: their methods panic, as
// their doc says (New checks the configuration so that the hot path checks
// nothing), rather than decide under a limit of nothing.
func TestBadInputToALimiterNewDidNotMake(t *testing.T) {
	unusable := map[string][]madeLimiter{
		"tokenbucket":    {&tokenbucket.Limiter{}, (*tokenbucket.Limiter)(nil)},
		"gcra":           {&gcra.Limiter{}, (*gcra.Limiter)(nil)},
		"fixedwindow":    {&fixedwindow.Limiter{}, (*fixedwindow.Limiter)(nil)},
		"slidingcounter": {&slidingcounter.Limiter{}, (*slidingcounter.Limiter)(nil)},
		"slidinglog":     {&slidinglog.Limiter{}, (*slidinglog.Limiter)(nil)},
	}
	calls := map[string]func(l madeLimiter){
		"Allow":   func(l madeLimiter) { l.Allow("k") },
		"Take":    func(l madeLimiter) { l.Take("k", 1) },
		"Take(0)": func(l madeLimiter) { l.Take("k", 0) },
		"Len":     func(l madeLimiter) { l.Len() },
		"Sweep":   func(l madeLimiter) { l.Sweep() },
		"Refund":  func(l madeLimiter) { l.Refund("k", hotlimit.Receipt{N: 1}) },
	}
	for name, ls := range unusable {
		for i, l := range ls {
			for call, f := range calls {
				t.Run(name+"/"+[]string{"zero", "nil"}[i]+"/"+call, func(t *testing.T) {
					assert.Panics(t, func() { f(l) })
				})
			}
		}
	}
}

// remainingLimiter is the method set AllowRemaining adds to this module's
// in-memory limiters.
type remainingLimiter interface {
	AllowRemaining(key string) (allowed bool, remaining int)
}

// TestBadInputToAllowRemainingAndRetryAfter: AllowRemaining of each
// in-memory limiter, and slidinglog's RetryAfter, on clocks that start and
// move anywhere on the int64 line (to either end, and back), under empty
// and invalid-UTF-8 keys, with counts from math.MinInt to math.MaxInt: no
// panic, a Remaining within [0, limit], and the waits RetryAfter documents
// (Never for n < 0 or n > limit, 0 for n == 0, never negative).
func TestBadInputToAllowRemainingAndRetryAfter(t *testing.T) {
	readings := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	for _, limit := range []int{1, 3, 1 << 16} {
		for _, window := range []time.Duration{time.Millisecond, time.Second, 24 * time.Hour} {
			var now atomic.Int64
			algorithms := map[string]func() (remainingLimiter, error){
				"tokenbucket": func() (remainingLimiter, error) { return tokenbucket.New(limit, window, hotlimit.WithClock(now.Load)) },
				"gcra":        func() (remainingLimiter, error) { return gcra.New(limit, window, hotlimit.WithClock(now.Load)) },
				"fixedwindow": func() (remainingLimiter, error) { return fixedwindow.New(limit, window, hotlimit.WithClock(now.Load)) },
				"slidingcounter": func() (remainingLimiter, error) {
					return slidingcounter.New(limit, window, hotlimit.WithClock(now.Load))
				},
				"slidinglog": func() (remainingLimiter, error) { return slidinglog.New(limit, window, hotlimit.WithClock(now.Load)) },
			}
			for name, build := range algorithms {
				for _, start := range readings {
					now.Store(start)
					l, err := build()
					if err != nil {
						require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
						continue
					}
					where := fmt.Sprintf("%s/limit=%d/window=%v/start=%d", name, limit, window, start)
					require.NotPanics(t, func() {
						for _, at := range readings {
							now.Store(at)
							for _, key := range []string{"\xff", ""} {
								_, rem := l.AllowRemaining(key)
								assert.True(t, rem >= 0 && rem <= limit, "%s at %d: remaining %d", where, at, rem)
								sl, ok := l.(*slidinglog.Limiter)
								if !ok {
									continue
								}
								for _, n := range []int{math.MinInt, -1, limit + 1, math.MaxInt} {
									assert.Equal(t, hotlimit.Never, sl.RetryAfter(key, n), "%s at %d: n=%d", where, at, n)
								}
								assert.Zero(t, sl.RetryAfter(key, 0), "%s at %d", where, at)
								for _, n := range []int{1, limit} {
									assert.GreaterOrEqual(t, sl.RetryAfter(key, n), time.Duration(0), "%s at %d: n=%d", where, at, n)
								}
							}
						}
					}, where)
				}
			}
		}
	}
}
