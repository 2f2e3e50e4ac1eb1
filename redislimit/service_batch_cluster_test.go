package redislimit_test

import (
	"context"
	"fmt"
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

// TestServiceBatchClusterMatchesOneByOne: on a cluster, a rule whose
// limits' keys (per user, pair, API, global) are on the three masters asks
// them together, and decides what its twin asking them in turn decides;
// once the per-user key's master is down and its breaker open, that limit
// is decided by its failure policy at once, with ErrBreakerOpen, and the
// others by Redis, in both.
func TestServiceBatchClusterMatchesOneByOne(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	global := cl.MasterOf("global")
	// user and api such that the keys "user|"+user, "api|"+api and
	// "global" are on three masters.
	pick := func(scope, prefix string, not *redistest.Server) (string, *redistest.Server) {
		for i := range 1000 {
			name := fmt.Sprint(prefix, i)
			if m := cl.MasterOf(scope + "|" + name); m != global && m != not {
				return name, m
			}
		}
		t.Fatalf("no %s found", prefix)
		return "", nil
	}
	user, victim := pick("user", "u", nil)
	api, _ := pick("api", "a", victim)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute},
		{Algorithm: hotlimit.GCRA, Limit: 6, Window: time.Minute, Scope: hotlimit.PerAPI},
		{Algorithm: hotlimit.SlidingCounter, Limit: 8, Window: time.Minute, Scope: hotlimit.Global},
	}}
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	var trips scriptTrips
	client := cl.Client()
	client.AddHook(&trips)
	batched, single, bobs, sobs := twins(t, client, rules, clock.Load, func(f hotlimit.Factory) hotlimit.Factory { return f },
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(1, time.Hour))
	ctx := context.Background()
	_, _, err := batched.TakeEach(ctx, user, api, 0, nil) // loads the scripts
	require.NoError(t, err)
	singles := trips.singles.Load()
	d, err := batched.TakeContext(ctx, user, api, 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	assert.Equal(t, singles, trips.singles.Load(), "the limits went in pipelines")
	_, err = single.TakeContext(ctx, user, api, 1)
	require.NoError(t, err)
	bobs.take()
	sobs.take()

	denials := runTwins(t, batched, single, bobs, sobs, &clock, []string{user}, []string{api}, 13, 150)
	assert.Greater(t, denials, 20)

	victim.Kill()
	for _, svc := range []*service.Service{batched, single} {
		for i := 0; ; i++ {
			require.Less(t, i, 3, "the breaker opens")
			_, each, err := svc.TakeEach(ctx, user, api, 1, nil)
			require.Error(t, err)
			require.Len(t, each, 4)
			if assert.Error(t, each[0].Err) && errorIsBreakerOpen(each[0].Err) {
				break
			}
		}
		bobs.take()
		sobs.take()
	}
	denials = runTwins(t, batched, single, bobs, sobs, &clock, []string{user}, []string{api}, 17, 150)
	assert.Greater(t, denials, 20)
}

// TestServiceBatchClusterMasterDownMatchesOneByOne: on a cluster whose
// master of the per-user key is down, its breaker closed, a rule's limits
// asked together are decided by the live masters in the batch, and the
// dead master's limit in its turn, by its failure policy: the requests'
// decisions, each limit's decision and error, and the step at which the
// dead master's breaker opens are the twin's, for each failure policy.
func TestServiceBatchClusterMasterDownMatchesOneByOne(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	for _, n := range cl.Nodes {
		require.NoError(t, n.Client().ConfigSet(context.Background(), "cluster-require-full-coverage", "no").Err())
	}
	global := cl.MasterOf("global")
	var user string
	var victim *redistest.Server
	for i := range 1000 {
		if m := cl.MasterOf(fmt.Sprint("user|u", i)); m != global {
			user, victim = fmt.Sprint("u", i), m
			break
		}
	}
	require.NotNil(t, victim)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 40, Window: time.Minute},
		{Algorithm: hotlimit.TokenBucket, Limit: 50, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.SlidingCounter, Limit: 30, Window: time.Minute, Scope: hotlimit.Global},
	}}
	client := cl.Client()
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(int64(time.Hour))
	killed := false
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		batched, single, bobs, sobs := twins(t, client, rules, clock.Load, func(f hotlimit.Factory) hotlimit.Factory { return f },
			redislimit.WithFailPolicy(policy), redislimit.WithBreaker(3, time.Hour))
		if !killed {
			_, err := batched.TakeContext(ctx, "warm", "GET /", 0) // loads the scripts
			require.NoError(t, err)
			victim.Kill()
			killed = true
			bobs.take()
		}
		for step := range 6 {
			want := outcome(single, ctx, user, "GET /", 1)
			got := outcome(batched, ctx, user, "GET /", 1)
			require.Equal(t, want, got, "%v: step %d", policy, step)
		}
		assert.Equal(t, sobs.take(), bobs.take(), "%v", policy)
	}
}
