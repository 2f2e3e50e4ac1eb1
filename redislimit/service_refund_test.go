package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceRefundContextGivesBackInRedis: a service on Redis gives a
// request back with RefundContext (and Refund), each limit of the pair's
// rule in Redis under its own scope's key, for a rule of several limits and
// a rule of one; a denial's zero Receipt gives nothing back.
func TestServiceRefundContextGivesBackInRedis(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{
			{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
			{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser},
		},
		APIs: map[string]service.Limits{"GET /log": {{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute}}},
	}, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(exactTimeout))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	// remaining is each limit's Remaining, by its Limit.
	remaining := func(api string) map[int]int {
		t.Helper()
		_, each, err := svc.TakeEach(ctx, "zed", api, 0, nil)
		require.NoError(t, err)
		out := map[int]int{}
		for _, l := range each {
			out[l.Config.Limit] = l.Decision.Remaining
		}
		return out
	}

	d, r, err := svc.TakeReceiptContext(ctx, "zed", "POST /pay", 2)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	require.Equal(t, map[int]int{3: 1, 5: 3}, remaining("POST /pay"))
	d, denied, err := svc.TakeReceiptContext(ctx, "zed", "GET /a", 2)
	require.NoError(t, err)
	require.False(t, d.Allowed, "the user has 1 left")
	assert.Equal(t, service.Receipt{}, denied)
	require.NoError(t, svc.RefundContext(ctx, denied))
	require.Equal(t, map[int]int{3: 1, 5: 3}, remaining("POST /pay"))

	require.NoError(t, svc.RefundContext(ctx, r))
	assert.Equal(t, map[int]int{3: 3, 5: 5}, remaining("POST /pay"), "both limits got their 2 back")

	_, r, err = svc.TakeReceiptContext(ctx, "zed", "GET /log", 2)
	require.NoError(t, err)
	require.Equal(t, map[int]int{2: 0}, remaining("GET /log"))
	svc.Refund(r)
	assert.Equal(t, map[int]int{2: 2}, remaining("GET /log"), "Refund, without a context")
}

// TestServiceRefundLeavesFailLocalCount: while Redis is down, FailLocal (the
// default) admits a request in its in-process limiter and gives the zero
// Receipt, so a refund gives nothing back there: requests given back during
// an outage still count against the in-process quota, as the service's
// TakeReceiptContext says.
func TestServiceRefundLeavesFailLocalCount(t *testing.T) {
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		frozenClock(), hotlimit.WithFactory(redislimit.Factory(closedClient(t))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	for i := range 2 {
		d, r, err := svc.TakeReceiptContext(ctx, "zed", "POST /pay", 1)
		require.Error(t, err, "Redis is down")
		require.True(t, d.Allowed, "request %d: FailLocal admits it in memory", i)
		assert.Equal(t, service.Receipt{}, r, "request %d: the failure policy's decision holds nothing", i)
		require.NoError(t, svc.RefundContext(ctx, r))
	}
	d, _, err := svc.TakeReceiptContext(ctx, "zed", "POST /pay", 1)
	require.Error(t, err)
	assert.False(t, d.Allowed, "the two requests given back still count in the in-process limiter")
}
