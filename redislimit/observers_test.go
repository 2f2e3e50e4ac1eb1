package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestObserversPassRedisFallbacksToEachFallbackObserver: a service on a
// real Redis reports to hotlimit.Observers of two FallbackObservers, one of
// them behind a nested Observers, and an ObserverFunc. While Redis answers,
// each hears of every decision and none of a fallback; once Redis is
// killed, each FallbackObserver hears of every fallback, and every one
// still hears of every decision.
func TestObserversPassRedisFallbacksToEachFallbackObserver(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	a := &tally{outcomes: map[hotlimit.Outcome]int{}, fallbacks: map[string]int{}}
	b := &tally{outcomes: map[hotlimit.Outcome]int{}, fallbacks: map[string]int{}}
	var plain atomic.Int64
	obs := hotlimit.Observers(a, hotlimit.Observers(b, nil), hotlimit.ObserverFunc(func(hotlimit.Event) { plain.Add(1) }))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{faultConfig}},
		frozenClock(), hotlimit.WithObserver(obs), hotlimit.WithFactory(redislimit.Factory(client,
			redislimit.WithPrefix(t.Name()+":"), redislimit.WithFailPolicy(redislimit.FailLocal), redislimit.WithBreaker(0, 0),
			// a round trip under -race on a loaded machine may take long
			redislimit.WithTimeout(10*time.Second))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })

	_, err = svc.TakeContext(context.Background(), "u", "x", 1)
	require.NoError(t, err, "Redis decides")
	for _, o := range []*tally{a, b} {
		assert.Equal(t, 1, o.outcomes[hotlimit.OutcomeAllowed], "the decision")
		assert.Empty(t, o.fallbacks, "no fallback while Redis answers")
	}
	assert.EqualValues(t, 1, plain.Load())

	srv.Kill()
	const n = 3
	for range n {
		_, err := svc.TakeContext(context.Background(), "u", "x", 1)
		require.Error(t, err, "Redis is down")
	}
	for i, o := range []*tally{a, b} {
		sum := 0
		for _, c := range o.outcomes {
			sum += c
		}
		assert.Equal(t, 1+n, sum, "observer %d: every decision", i)
		fallbacks := 0
		for _, c := range o.fallbacks {
			fallbacks += c
		}
		assert.Equal(t, n, fallbacks, "observer %d: every fallback, %v", i, o.fallbacks)
	}
	assert.EqualValues(t, 1+n, plain.Load(), "the function hears of every decision")
}
