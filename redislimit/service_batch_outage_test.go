package redislimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
)

// outageRules have two or more limits on Redis asked together, with a
// limit in memory (see inMemoryAt) that denies before them, after them,
// and one in shadow mode among them.
var outageRules = service.Rules{
	Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute},
		{Algorithm: hotlimit.GCRA, Limit: 50, Window: time.Minute, Scope: hotlimit.PerUser},
	},
	APIs: map[string]service.Limits{
		"POST /first": {
			{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: inMemoryWindow, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute},
			{Algorithm: hotlimit.SlidingCounter, Limit: 50, Window: time.Minute, Scope: hotlimit.PerUser},
		},
		"POST /last": {
			{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute},
			{Algorithm: hotlimit.GCRA, Limit: 50, Window: time.Minute, Scope: hotlimit.PerAPI},
			{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: inMemoryWindow, Scope: hotlimit.PerUser},
		},
		"POST /shadow": {
			{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Shadow: true},
			{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: inMemoryWindow, Scope: hotlimit.PerUser},
		},
	},
}

// outageTwins returns a service of outageRules whose limits on Redis (on
// client) are asked together, and its twin asking them one after another,
// each with a fallbackLog observer, the limits on Redis built with opts.
func outageTwins(t *testing.T, client redis.UniversalClient, opts ...hotlimit.Option) (batched, single *service.Service, bobs, sobs *fallbackLog) {
	t.Helper()
	bobs, sobs = &fallbackLog{}, &fallbackLog{}
	var err error
	batched, err = service.NewFromRules(outageRules, frozenClock(), hotlimit.WithObserver(bobs),
		hotlimit.WithFactory(inMemoryAt(redislimit.Factory(client, opts...))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = batched.Close() })
	single, err = service.NewFromRules(outageRules, frozenClock(), hotlimit.WithObserver(sobs),
		hotlimit.WithFactory(inMemoryAt(oneByOneFactory(client, opts...))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = single.Close() })
	return batched, single, bobs, sobs
}

// outcome is one request's outcome, as a test compares it: the decision,
// and each limit's decision and the reason of its error.
func outcome(svc *service.Service, ctx context.Context, user, api string, n int) string {
	if ctx == nil {
		return fmt.Sprintf("%+v", svc.Take(user, api, n)) // no context: no errors to compare
	}
	d, each, err := svc.TakeEach(ctx, user, api, n, nil)
	s := fmt.Sprintf("%+v err=%v", d, err != nil)
	for i, ld := range each {
		reason := "-"
		if ld.Err != nil {
			reason = redislimit.Reason(ld.Err)
		}
		s += fmt.Sprintf("\n  [%d] %+v %s", i, ld.Decision, reason)
	}
	return s
}

// fallbackReasons lists the reasons of the fallbacks f heard, in order.
func fallbackReasons(f *fallbackLog) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var r []string
	for _, fb := range f.got {
		r = append(r, fb.Policy.String()+" "+fb.Reason)
	}
	return r
}

// deadClient returns a client of deadAddr that fails each call at its
// first refused dial, without retries.
func deadClient(t *testing.T) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialerRetries: 1, DialerRetryTimeout: time.Microsecond})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// TestServiceBatchOutageBreakerMatchesOneByOne: with Redis unreachable, a
// rule's limits on Redis asked together open their breakers after as many
// requests as the twin asking them in turn: a take Redis could not decide
// ahead, asked again in its turn, is one failure of its breaker, not two;
// and a request that a limit in memory denies before the limits on Redis
// (which the twin then never asks) counts no failure. Every request's
// decision, each limit's decision and error, and the fallbacks the
// observer hears are the twin's, for each failure policy, with and without
// a context, n within and beyond a capacity.
func TestServiceBatchOutageBreakerMatchesOneByOne(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	client := deadClient(t)
	ctx := context.Background()
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for _, api := range []string{"GET /", "POST /first", "POST /last", "POST /shadow"} {
			for _, withCtx := range []bool{true, false} {
				name := fmt.Sprintf("%v %s ctx=%v", policy, api, withCtx)
				batched, single, bobs, sobs := outageTwins(t, client,
					redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Minute), redislimit.WithTimeout(exactTimeout))
				c := ctx
				if !withCtx {
					c = nil
				}
				for step, n := range []int{1, 1, 1, 200, 1, 1, 1} {
					want := outcome(single, c, "u", api, n)
					got := outcome(batched, c, "u", api, n)
					require.Equal(t, want, got, "%s: step %d", name, step)
				}
				assert.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
			}
		}
	}
}

// TestServiceBatchHalfOpenProbeMatchesOneByOne: with Redis unreachable
// and the breakers' cooldown over, a request whose limits on Redis are
// asked together probes each breaker as the twin asking them in turn
// does: in the limit's turn, so that its failure policy hears the probe's
// own error, not the breaker's refusal after a probe made ahead, and the
// breaker is open again for as long.
func TestServiceBatchHalfOpenProbeMatchesOneByOne(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	client := deadClient(t)
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for _, api := range []string{"GET /", "POST /first", "POST /last", "POST /shadow"} {
			name := fmt.Sprintf("%v %s", policy, api)
			batched, single, bobs, sobs := outageTwins(t, client,
				redislimit.WithFailPolicy(policy), redislimit.WithBreaker(2, time.Minute), redislimit.WithTimeout(exactTimeout))
			// Rows: how far the breakers' clock moves before the request.
			for step, move := range []time.Duration{0, 0, 0, 2 * time.Minute, 0, 30 * time.Second, 31 * time.Second, 0} {
				breakerNow.Add(int64(move))
				want := outcome(single, context.Background(), "u", api, 1)
				got := outcome(batched, context.Background(), "u", api, 1)
				require.Equal(t, want, got, "%s: step %d", name, step)
			}
			assert.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
		}
	}
}

// TestServiceBatchClusterLookupFailureMatchesOneByOne: on a cluster client
// that cannot load its slot map, a rule's limits asked together fail the
// lookup of their keys' masters as the twin asking them in turn does: a
// lookup that failed ahead, asked again in the limit's turn, is one
// failure of the limiter's breaker, not two, so the breakers open after
// as many requests, and the requests' decisions, the limits' errors and
// the fallbacks are the twin's, for each failure policy.
func TestServiceBatchClusterLookupFailureMatchesOneByOne(t *testing.T) {
	var breakerNow atomic.Int64
	breakerNow.Store(int64(time.Hour))
	redislimit.SetBreakerClock(breakerNow.Load)
	t.Cleanup(func() { redislimit.SetBreakerClock(nil) })
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{deadAddr(t)}, ContextTimeoutEnabled: true, MaxRetries: -1,
		DialerRetries: 1, DialerRetryTimeout: time.Microsecond})
	t.Cleanup(func() { _ = client.Close() })
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		for _, api := range []string{"GET /", "POST /first", "POST /last", "POST /shadow"} {
			name := fmt.Sprintf("%v %s", policy, api)
			batched, single, bobs, sobs := outageTwins(t, client,
				redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Minute), redislimit.WithTimeout(exactTimeout))
			// Rows: how far the breakers' clock moves before the request.
			for step, move := range []time.Duration{0, 0, 0, 0, 2 * time.Minute, 0, 61 * time.Second} {
				breakerNow.Add(int64(move))
				want := outcome(single, context.Background(), "u", api, 1)
				got := outcome(batched, context.Background(), "u", api, 1)
				require.Equal(t, want, got, "%s: step %d", name, step)
			}
			assert.Equal(t, fallbackReasons(sobs), fallbackReasons(bobs), name)
		}
	}
}
