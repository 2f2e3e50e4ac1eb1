package service_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// batchingFactory builds the service's in-memory limiters, those of every
// algorithm but the token bucket as limitertest.Batchings that log into
// log.
func batchingFactory(log *[]string) hotlimit.Option {
	return hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil || c.Algorithm == hotlimit.TokenBucket {
			return l, err
		}
		return &limitertest.Batching{Refunder: l.(hotlimit.Refunder), Conf: c, Log: log}, nil
	})
}

// batchingRules has a rule whose batch (the fixed windows) is split by a
// token bucket asked in turn, a rule of batched limits only, and one with
// a limit in shadow mode.
var batchingRules = service.Rules{
	Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute},
		{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Minute, Scope: hotlimit.PerAPI},
	},
	APIs: map[string]service.Limits{
		"POST /batched": {
			{Algorithm: hotlimit.GCRA, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.SlidingCounter, Limit: 4, Window: time.Minute},
		},
		"POST /shadow": {
			{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Shadow: true},
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
		},
	},
}

// TestDenialGivesBackAndReportsTheBatchTogether: when a limit denies a
// request that the batch took, the batch's limits give it back and report
// in one more batch, not one call each, and a report (n = 0) asks them in
// one batch too; the limits in between are given back and asked in turn.
func TestDenialGivesBackAndReportsTheBatchTogether(t *testing.T) {
	var log []string
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	s, err := service.NewFromRules(batchingRules, clock, batchingFactory(&log))
	require.NoError(t, err)
	ctx := context.Background()
	state := func() map[int]int { return remainingByLimit(t, s, "u", "GET /a") }

	d, err := s.TakeContext(ctx, "u", "GET /a", 2)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, []string{"take 2"}, log)
	assert.Equal(t, map[int]int{10: 8, 5: 3, 2: 0, 6: 4}, state())
	assert.Equal(t, []string{"take 2", "report 2"}, log, "a report asks the batch together")

	log = nil
	d, err = s.TakeContext(ctx, "u", "GET /a", 2) // the second token bucket denies
	require.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.Equal(t, []string{"take 2", "report 2, 2 given back"}, log)
	assert.Equal(t, map[int]int{10: 8, 5: 3, 2: 0, 6: 4}, state(), "every limit gave it back")

	log = nil
	assert.False(t, s.Take("u", "GET /a", 1).Allowed, "without a context")
	assert.Equal(t, []string{"take 2", "report 2, 2 given back"}, log)
}

// TestBatchedServiceMatchesOneByOne: a random sequence of takes, reports,
// refunds and requests beyond every limit on a stepped clock decides
// exactly what it decides when no limit is asked with another: the rule's
// decision, each limit's own, and the state every limit is left in.
func TestBatchedServiceMatchesOneByOne(t *testing.T) {
	var log []string
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clock := hotlimit.WithClock(now.Load)
	batched, err := service.NewFromRules(batchingRules, clock, batchingFactory(&log))
	require.NoError(t, err)
	single, err := service.NewFromRules(batchingRules, clock)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 5))
	users, apis := []string{"ann", "bob"}, []string{"GET /a", "POST /batched", "POST /shadow"}
	type held struct{ b, s service.Receipt }
	var receipts []held
	ctx := context.Background()
	denials := 0
	for step := range 2000 {
		if rng.IntN(4) == 0 {
			now.Add(rng.Int64N(int64(15 * time.Second)))
		}
		if len(receipts) > 0 && rng.IntN(5) == 0 {
			i := rng.IntN(len(receipts))
			require.NoError(t, batched.RefundContext(ctx, receipts[i].b))
			require.NoError(t, single.RefundContext(ctx, receipts[i].s))
			receipts = append(receipts[:i], receipts[i+1:]...)
			continue
		}
		user, api, n := users[rng.IntN(2)], apis[rng.IntN(len(apis))], rng.IntN(4)
		if rng.IntN(20) == 0 {
			n = 20 // more than any limit holds
		}
		what := fmt.Sprintf("step %d: %s %s n=%d", step, user, api, n)
		switch rng.IntN(3) {
		case 0:
			bd := batched.Take(user, api, n)
			require.Equal(t, single.Take(user, api, n), bd, what)
		case 1:
			bd, beach, berr := batched.TakeEach(ctx, user, api, n, nil)
			sd, seach, serr := single.TakeEach(ctx, user, api, n, nil)
			require.NoError(t, berr, what)
			require.NoError(t, serr, what)
			require.Equal(t, sd, bd, what)
			require.Equal(t, seach, beach, what)
			if n > 0 && !bd.Allowed {
				denials++
			}
		default:
			bd, br, berr := batched.TakeReceiptContext(ctx, user, api, n)
			sd, sr, serr := single.TakeReceiptContext(ctx, user, api, n)
			require.NoError(t, berr, what)
			require.NoError(t, serr, what)
			require.Equal(t, sd, bd, what)
			if br != (service.Receipt{}) {
				receipts = append(receipts, held{br, sr})
			}
		}
	}
	assert.Greater(t, denials, 100, "the sequence denies often enough to matter")
	gaveBack := 0
	for _, l := range log {
		if l == "report 2, 2 given back" {
			gaveBack++
		}
	}
	assert.Greater(t, gaveBack, 50, "denials gave back batches")
}

// TestPanicInDenialsBatchGivesBackEveryLimit: when the batch that gives
// back and reports on a denial panics (having given back its own limits,
// as a Batcher must), the limits asked in turn that took the request give
// it back too, and the panic goes on: the request counts nowhere.
func TestPanicInDenialsBatchGivesBackEveryLimit(t *testing.T) {
	var log []string
	var batchers []*limitertest.Batching
	clock := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	s, err := service.NewFromRules(batchingRules, clock, hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := service.NewLimiter(c, opts...)
		if err != nil || c.Algorithm == hotlimit.TokenBucket {
			return l, err
		}
		b := &limitertest.Batching{Refunder: l.(hotlimit.Refunder), Conf: c, Log: &log}
		batchers = append(batchers, b)
		return b, nil
	}))
	require.NoError(t, err)
	for _, b := range batchers {
		b.Before = func() {
			if log[len(log)-1] == "report 2, 2 given back" {
				panic("batch")
			}
		}
	}
	ctx := context.Background()
	require.True(t, s.Allow("u", "GET /a")) // the second token bucket: 1 left
	require.PanicsWithValue(t, "batch", func() { _, _ = s.TakeContext(ctx, "u", "GET /a", 2) })
	assert.Equal(t, []string{"take 2", "take 2", "report 2, 2 given back"}, log)
	assert.Equal(t, map[int]int{10: 9, 5: 4, 2: 1, 6: 5}, remainingByLimit(t, s, "u", "GET /a"), "each limit holds the first request only")
}
