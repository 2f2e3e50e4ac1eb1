package service_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// logFactory is a factory that builds every limit with service.NewLimiter,
// but a sliding log of a minute, which it builds with the clock log (when
// not nil) and sets *built to; when nest is set, it returns that log inside a
// composite, after a token bucket of 100 per second (on the service's
// clock) that never denies here, as a factory may build a limit of a rule.
func logFactory(t *testing.T, log hotlimit.Clock, nest bool, built **slidinglog.Limiter) hotlimit.Factory {
	return func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Algorithm != hotlimit.SlidingLog || c.Window != time.Minute {
			return service.NewLimiter(c, opts...)
		}
		logOpts := opts
		if log != nil {
			logOpts = append(opts[:len(opts):len(opts)], hotlimit.WithClock(log))
		}
		l, err := slidinglog.New(c.Limit, c.Window, logOpts...)
		if err != nil {
			return nil, err
		}
		*built = l
		if !nest {
			return l, nil
		}
		spare, err := service.NewLimiter(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Second}, opts...)
		require.NoError(t, err)
		return composite.New(spare, l)
	}
}

// logOf returns the rule's sliding log's own decision for (user, api) as
// TakeEach reports it, without taking anything.
func logOf(t *testing.T, svc *service.Service, user, api string) hotlimit.Decision {
	t.Helper()
	_, each, err := svc.TakeEach(context.Background(), user, api, 0, nil)
	require.NoError(t, err)
	for _, e := range each {
		if e.Config.Algorithm == hotlimit.SlidingLog && e.Config.Window == time.Minute {
			return e.Decision
		}
	}
	require.FailNow(t, "no sliding log of a minute in the rule")
	return hotlimit.Decision{}
}

// TestRuleRetryAfterOfSeveralWaitsForALaterSlidingLog: under a rule of 2
// per second and a sliding log of 2 per minute per user, which the rule
// asks last, a request of 2 half a second after the first 2 is denied by
// the second's limit, and the log denies it too until the minute is out.
// The log was not asked about a request of more than one, and RetryAfter
// was the second's 0.5 s, after which the retry was denied again for 59 s:
// it is the log's wait (59.5 s), by Take, TakeContext and TakePolicy; the
// request passes exactly then, and is denied 1 ns sooner. So too with the
// log inside a composite a factory built for the limit. The log is asked
// without counting anything (a twin that was never asked holds the same
// log) and without allocating.
func TestRuleRetryAfterOfSeveralWaitsForALaterSlidingLog(t *testing.T) {
	algs := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog}
	for _, sa := range algs {
		for _, nest := range []bool{false, true} {
			name := sa.String()
			if nest {
				name += "/nested"
			}
			t.Run(name, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(1000 * time.Hour)) // on every window's boundary
				minute := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser}
				ls := service.Limits{{Algorithm: sa, Limit: 2, Window: time.Second}, minute}
				var log *slidinglog.Limiter
				svc, err := service.NewFromRules(service.Rules{Default: ls},
					hotlimit.WithClock(now.Load), hotlimit.WithFactory(logFactory(t, nil, nest, &log)))
				require.NoError(t, err)
				require.NotNil(t, log)
				twin, err := slidinglog.New(2, time.Minute, hotlimit.WithClock(now.Load))
				require.NoError(t, err)

				require.True(t, svc.Take("u", "a", 2).Allowed)
				require.True(t, twin.Take("k", 2).Allowed)
				now.Add(int64(500 * time.Millisecond))
				d := svc.Take("u", "a", 2)
				require.False(t, d.Allowed)
				assert.Equal(t, 59*time.Second+500*time.Millisecond, d.RetryAfter, "the log's wait")
				dc, err := svc.TakeContext(context.Background(), "u", "a", 2)
				require.NoError(t, err)
				assert.Equal(t, d, dc, "TakeContext")
				pd, _ := svc.TakePolicy("u", "a", 2)
				assert.Equal(t, d.RetryAfter, pd.RetryAfter, "TakePolicy")
				want, got := twin.Take("k", 0), logOf(t, svc, "u", "b")
				assert.Equal(t, want.Remaining, got.Remaining, "the log as it would be without the questions")
				assert.Equal(t, want.ResetAfter, got.ResetAfter, "the log as it would be without the questions")
				assertDenialAllocatesNothing(t, func() { svc.Take("u", "a", 2) }, "a denial that asks the log")
				limitertest.PassesAtRetryAfter(t, &now, d, func() hotlimit.Decision { return svc.Take("u", "a", 2) })
			})
		}
	}
}

// TestRuleRetryAfterLeavesALaterSlidingLogAsItWas forces the race between
// a later sliding log's report and the question of its wait, under a rule
// of 2 per minute (a fixed window) and a sliding log of 2 per minute: the
// log, full with the requests at 0 s and 30 s, reports itself spent after
// the window's denial at 35 s, then its clock moves past the request at
// 0 s before it is asked for the request. It was asked by a Take, admitted
// the request and, given it back, marked its oldest counted request (at
// 30 s) refunded in place of the new one (see slidinglog.Limiter.Refund),
// holding a request of the denied call until a minute after the question:
// at 95 s, in a window of its own, the second of two requests was denied
// for 26 s more. It is asked by RetryAfter, which counts nothing: the log
// is as a twin that was never asked, at once and at 95 s, when both
// requests pass. So too with the log inside a composite a factory built
// for the limit, whose children are asked one by one; and by TakeContext.
func TestRuleRetryAfterLeavesALaterSlidingLogAsItWas(t *testing.T) {
	for _, nest := range []bool{false, true} {
		for _, withContext := range []bool{false, true} {
			name := map[bool]string{false: "log", true: "nested"}[nest] + map[bool]string{false: "/Take", true: "/TakeContext"}[withContext]
			t.Run(name, func(t *testing.T) {
				testRuleLaterSlidingLogAsItWas(t, nest, withContext)
			})
		}
	}
}

func testRuleLaterSlidingLogAsItWas(t *testing.T, nest, withContext bool) {
	var now atomic.Int64 // the window's (and the spare's)
	start := int64(1000 * time.Hour)
	now.Store(start)
	var clock limitertest.HookClock // the log's, from 0
	ls := service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute},
	}
	var log *slidinglog.Limiter
	svc, err := service.NewFromRules(service.Rules{Default: ls},
		hotlimit.WithClock(now.Load), hotlimit.WithFactory(logFactory(t, clock.Read, nest, &log)))
	require.NoError(t, err)
	require.NotNil(t, log)
	twin, err := slidinglog.New(2, time.Minute, hotlimit.WithClock(clock.Read))
	require.NoError(t, err)
	at := func(sec int64) {
		now.Store(start + sec*int64(time.Second))
		clock.Now.Store(sec * int64(time.Second))
	}
	for _, sec := range []int64{0, 30} {
		at(sec)
		require.True(t, svc.Allow("u", "a"), "at %d s", sec)
		require.True(t, twin.Allow("k"), "at %d s", sec)
	}

	at(35)
	reported := false
	clock.Hook = func() { // at the log's report
		reported = true
		clock.Now.Store(int64(61 * time.Second)) // the request at 0 s has left
	}
	var d hotlimit.Decision
	if withContext {
		d, err = svc.TakeContext(context.Background(), "u", "a", 1)
		require.NoError(t, err)
	} else {
		d = svc.Take("u", "a", 1)
	}
	require.True(t, reported, "the log reported its state")
	require.False(t, d.Allowed, "the window is spent")
	assert.Equal(t, 25*time.Second, d.RetryAfter, "the window's wait: the log admits the request at its question")
	want, got := twin.Take("k", 0), logOf(t, svc, "u", "a")
	assert.Equal(t, want.Remaining, got.Remaining, "at the question")
	assert.Equal(t, want.ResetAfter, got.ResetAfter, "at the question")

	at(95) // the request at 30 s has left too; the window is a new one
	want, got = twin.Take("k", 0), logOf(t, svc, "u", "a")
	assert.Equal(t, want.Remaining, got.Remaining, "once the request at 30 s has left")
	assert.Equal(t, want.ResetAfter, got.ResetAfter, "once the request at 30 s has left")
	assert.Equal(t, 2, got.Remaining)
	assert.True(t, svc.Allow("u", "a"), "the first request at 95 s")
	second := svc.Take("u", "a", 1)
	assert.True(t, second.Allowed, "the second request at 95 s: RetryAfter %v", second.RetryAfter)
}
