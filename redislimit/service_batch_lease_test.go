package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceBatchLeasedLimitNotAskedAhead: a limit that leases
// (redislimit.WithLease) is decided by its lease or by a round trip of its
// own, never in the others' pipeline, so it is asked in the rule's order,
// after the limits before it: a request that a limit before it denies
// never spends from its lease. Asked ahead with the others, each such
// request would spend one from the lease and give it back to Redis stamped
// with the lease's time, less what refilled since, nothing once a token
// refilled: a user past his own limit would drain the global one, request
// by request. The twin asking every limit in turn decides the same.
func TestServiceBatchLeasedLimitNotAskedAhead(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.SlidingCounter, Limit: 1, Window: time.Hour, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 50, Window: time.Hour, Scope: hotlimit.PerAPI},
		{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute, Scope: hotlimit.Global},
	}}
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	batched, single, bobs, sobs := twins(t, client, rules, clock.Load, func(f hotlimit.Factory) hotlimit.Factory { return f },
		redislimit.WithLease(5, time.Minute))
	ctx := context.Background()
	for _, svc := range []*service.Service{batched, single} {
		d, err := svc.TakeContext(ctx, "ann", "GET /a", 1) // ann's limit spent, the global one leased
		require.NoError(t, err)
		require.True(t, d.Allowed)
	}
	clock.Add(int64(12 * time.Second)) // two tokens refill
	for i := range 3 {
		bd, beach, err := batched.TakeEach(ctx, "ann", "GET /a", 1, nil)
		require.NoError(t, err)
		sd, seach, err := single.TakeEach(ctx, "ann", "GET /a", 1, nil)
		require.NoError(t, err)
		require.False(t, bd.Allowed, "request %d: ann's own limit", i)
		assert.Equal(t, sd, bd, "request %d", i)
		assert.Equal(t, seach, beach, "request %d: the leases and Redis as they were", i)
	}
	for _, user := range []string{"bob", "cid", "dan"} {
		bd, beach, err := batched.TakeEach(ctx, user, "GET /a", 1, nil)
		require.NoError(t, err)
		sd, seach, err := single.TakeEach(ctx, user, "GET /a", 1, nil)
		require.NoError(t, err)
		assert.Equal(t, sd, bd, user)
		assert.Equal(t, seach, beach, "%s: the global limit lost nothing", user)
	}
	assert.Equal(t, sobs.take(), bobs.take())
}

// TestServiceBatchLeasedMatchesOneByOne: a rule whose limits on Redis
// lease (redislimit.WithLease: TakeAll decides a leased take alone)
// decides what its twin asking every limit in turn decides.
func TestServiceBatchLeasedMatchesOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	batched, single, bobs, sobs := twins(t, client, batchRules, clock.Load, func(f hotlimit.Factory) hotlimit.Factory { return f },
		redislimit.WithLease(2, 10*time.Second))
	denials := runTwins(t, batched, single, bobs, sobs, &clock, []string{"ann", "bob"}, []string{"GET /any", "POST /shadow", "POST /two", "GET /one"}, 5, 800)
	assert.Greater(t, denials, 150, "the sequence denies often enough to matter")
}
