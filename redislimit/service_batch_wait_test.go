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

// TestServiceBatchWaitMatchesOneByOne: Service.Wait and WaitN on a rule
// whose limits on Redis are asked together sleep what they sleep when the
// limits are asked in turn (the least wait after which every limit admits
// the request, asked of the limits after the denier), and pass as many.
func TestServiceBatchWaitMatchesOneByOne(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
		{Algorithm: hotlimit.GCRA, Limit: 4, Window: time.Minute, Scope: hotlimit.Global},
		{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Minute, Scope: hotlimit.PerAPI},
	}}
	waits := func(together bool) []time.Duration {
		var clock atomic.Int64
		clock.Store(int64(time.Hour))
		opts := []hotlimit.Option{redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(map[bool]string{true: "t:", false: "s:"}[together])}
		f := redislimit.Factory(client, opts...)
		if !together {
			f = oneByOneFactory(client, opts...)
		}
		svc, err := service.NewFromRules(rules, hotlimit.WithClock(clock.Load), hotlimit.WithFactory(f))
		require.NoError(t, err)
		defer func() { _ = svc.Close() }()
		var slept []time.Duration
		sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
			slept = append(slept, d)
			clock.Add(int64(d))
			return nil
		})
		ctx := context.Background()
		for i := range 12 {
			if i%3 == 2 {
				require.NoError(t, svc.WaitN(ctx, "zed", "GET /a", 2, sleep), "wait %d", i)
			} else {
				require.NoError(t, svc.Wait(ctx, "zed", "GET /a", sleep), "wait %d", i)
			}
			slept = append(slept, -1) // a wait's end
		}
		assert.ErrorIs(t, svc.WaitN(ctx, "zed", "GET /a", 3, sleep), hotlimit.ErrNeverPasses)
		return slept
	}
	together, inTurn := waits(true), waits(false)
	assert.Equal(t, inTurn, together)
	assert.Greater(t, len(together), 20, "the waits slept")
}

// TestServiceBatchTakeWithUnchanged: TakeWith's limit, a rule of one
// limit, is asked on its own, as before, beside the rules whose limits are
// asked together.
func TestServiceBatchTakeWithUnchanged(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var trips scriptTrips
	client.AddHook(&trips)
	svc, err := service.NewFromRules(batchRules, frozenClock(),
		hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	plan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser}
	ctx := context.Background()
	_, err = svc.TakeWithContext(ctx, "warm", "GET /a", plan, 1)
	require.NoError(t, err)
	for i, want := range []bool{true, true, false} {
		left := []int{1, 0, 0}[i]
		singles, pipelines := trips.singles.Load(), trips.pipelines.Load()
		d, err := svc.TakeWithContext(ctx, "zed", "GET /a", plan, 1)
		require.NoError(t, err)
		assert.Equal(t, want, d.Allowed, "request %d", i)
		assert.Equal(t, left, d.Remaining, "request %d", i)
		assert.Equal(t, singles+1, trips.singles.Load(), "one call of its own")
		assert.Equal(t, pipelines, trips.pipelines.Load())
		d = svc.Take("zed", "POST /two", 1)
		assert.True(t, d.Allowed)
	}
}

// TestServiceBatchReplaceWhileHeld: a Replace that drops a rule's limits
// while its limits' pipeline is in flight closes them, and the request
// still decided on them is decided by what Redis answered: denied by one
// limit, it is given back to the other by that closed limiter (Redis holds
// nothing of it), and the new rules count afresh.
func TestServiceBatchReplaceWhileHeld(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	hold := newPipeHold()
	client.AddHook(hold)
	old := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute, Scope: hotlimit.Global},
	}}
	svc, err := service.NewFromRules(old, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	d, err := svc.TakeContext(ctx, "ann", "GET /a", 1) // her own limit spent
	require.NoError(t, err)
	require.True(t, d.Allowed)

	hold.armed.Store(true)
	done := make(chan hotlimit.Decision, 1)
	go func() {
		d, err := svc.TakeContext(ctx, "ann", "GET /a", 1)
		assert.NoError(t, err)
		done <- d
	}()
	<-hold.ran // Redis took it from the global limit
	replaced := make(chan error, 1)
	go func() {
		replaced <- svc.Replace(service.Rules{Default: service.Limits{
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
			{Algorithm: hotlimit.TokenBucket, Limit: 6, Window: time.Minute, Scope: hotlimit.Global},
		}})
	}()
	require.NoError(t, <-replaced, "the limiters are closed while the request is held")
	close(hold.release)
	assert.False(t, (<-done).Allowed, "ann spent her own limit")

	unscoped := old.Default[1]
	unscoped.Scope = hotlimit.PerPair
	global := newExact(t, client, unscoped, frozenClock())
	assert.Equal(t, 4, take(t, global, "global", 0).Remaining, "the dropped limiter gave the request back")
	d, err = svc.TakeContext(ctx, "ann", "GET /a", 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "the new rules count afresh")
	assert.Equal(t, 2, d.Remaining)
}
