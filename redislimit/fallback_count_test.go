package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestFallbacksCountCallsNotRequests pins what hotlimit.Fallback documents:
// with Redis unreachable, a request decided by a rule of three limits on
// Redis makes one fallback per limit when it passes, and, when a limit
// denies it, one per limit taken plus one per other limit asked for its
// report: one decision, but three or four fallbacks. The limits asked
// together, which Redis could not decide, are asked in turn, and only
// there by their failure policies.
func TestFallbacksCountCallsNotRequests(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute},
		{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute}, // in memory (FailLocal): one request
		{Algorithm: hotlimit.GCRA, Limit: 50, Window: time.Minute},
	}}
	var log fallbackLog
	svc, err := service.NewFromRules(rules, frozenClock(), hotlimit.WithFactory(redislimit.Factory(client)), hotlimit.WithObserver(&log))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })

	count := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.got)
	}
	d, err := svc.TakeContext(context.Background(), "u", "GET /", 1)
	require.Error(t, err, "Redis is unreachable")
	require.True(t, d.Allowed, "FailLocal passes the first request")
	assert.Equal(t, 3, count(), "a request that passes: one take per limit")

	d, err = svc.TakeContext(context.Background(), "u", "GET /", 1)
	require.Error(t, err)
	require.False(t, d.Allowed, "the token bucket's local limiter denies the second")
	assert.Equal(t, 3+4, count(), "a denial: two takes, then the reports of the two others")
}
