package service_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestWaitNeverSaysWhy: a request that can never pass is told why, as
// hotlimit.WaitN tells it of a limiter: within what the rule passes at
// once, but on a clock past the range the limiters count (after which a
// key refills no more), it says so, not that it asks more than ever
// passes at once; more than the rule's least capacity says that.
func TestWaitNeverSaysWhy(t *testing.T) {
	late := func() int64 { return math.MaxInt64 - int64(time.Minute) }
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.SlidingCounter} {
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
			{Algorithm: a, Limit: 2, Window: time.Hour},
			{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour, Shadow: true}, // bounds nothing
		}}, hotlimit.WithClock(late))
		require.NoError(t, err)
		require.True(t, svc.Take("u", "a", 2).Allowed, "%v", a)

		err = svc.WaitN(context.Background(), "u", "a", 2)
		require.ErrorIs(t, err, hotlimit.ErrNeverPasses, "%v", a)
		assert.Contains(t, err.Error(), "the limiter's clock stops before they would", "%v: 2 pass at once", a)

		err = svc.WaitN(context.Background(), "u", "a", 3)
		require.ErrorIs(t, err, hotlimit.ErrNeverPasses, "%v", a)
		assert.Contains(t, err.Error(), "more than ever pass at once", "%v", a)
	}
}

// TestWaitNeverNamesTheBurstOfTheRuleThatDenied: a Replace landing between
// the decision and its error (here, from the observer that hears the
// decision) does not lend the error the new rule's burst: 3 requests
// denied by a rule that passes 2 at once are told that at most 2 pass,
// not that they are within the burst of 10 the rules hold since.
func TestWaitNeverNamesTheBurstOfTheRuleThatDenied(t *testing.T) {
	var svc *service.Service
	var replaced bool
	obs := hotlimit.ObserverFunc(func(hotlimit.Event) {
		if !replaced {
			replaced = true
			require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{
				{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Hour},
			}}))
		}
	})
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Hour}, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	err = svc.WaitN(context.Background(), "u", "a", 3)
	require.True(t, replaced, "the observer heard the denial")
	require.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.Contains(t, err.Error(), "more than ever pass at once: at most 2")
}
