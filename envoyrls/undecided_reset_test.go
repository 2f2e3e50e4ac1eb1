package envoyrls

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFailClosedDenialSaysWhenToRetry: with Redis down, a token bucket
// on Redis under FailClosed denies every request, and its decision knows
// nothing of the key (Remaining and ResetAfter 0) but when Redis is asked
// again (RetryAfter, the breaker's cooldown or the timeout). The denial's
// duration_until_reset and RateLimit-Reset (and the RateLimit item's t)
// must not be 0: a client that retries at the reset would come back at
// once, to be denied again, as long as Redis stays down.
func TestAFailClosedDenialSaysWhenToRetry(t *testing.T) {
	down := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("redis is down") }
	client := redis.NewClient(&redis.Options{Addr: "redis:6379", Dialer: down, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	d, err := ParseDomain("closed.yaml", []byte(`
domain: closed
descriptors:
  - key: red
    rate_limit: {unit: minute, requests_per_unit: 100, algorithm: TokenBucket}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	s, err := New(cfg, WithBackendErrors(false), WithHeaders(HeadersReference|HeadersDraft), WithLogger(slog.New(slog.DiscardHandler)),
		WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailClosed)))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "closed",
		Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "red", Value: "v"}}}}})
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "FailClosed denies")
	got := map[string]string{}
	for _, hv := range resp.ResponseHeadersToAdd {
		got[hv.Key] = hv.Value
	}
	// What FailClosed answers, asked directly.
	lim, err := redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute},
		redislimit.WithFailPolicy(redislimit.FailClosed))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	direct, err := lim.TakeContext(context.Background(), "k", 1)
	require.Error(t, err)
	require.False(t, direct.Allowed)
	require.Zero(t, direct.ResetAfter, "FailClosed knows nothing of the key")
	require.Positive(t, direct.RetryAfter)
	assert.Equal(t, direct.RetryAfter, resp.Statuses[0].DurationUntilReset.AsDuration(), "duration_until_reset of the denial")
	retry := strconv.FormatInt(transport.CeilSeconds(direct.RetryAfter), 10)
	assert.Equal(t, map[string]string{
		"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": retry,
		"RateLimit-Policy": `"tokenbucket-100-1m";q=100;w=60`, "RateLimit": `"tokenbucket-100-1m";r=0;t=` + retry,
	}, got)
}
