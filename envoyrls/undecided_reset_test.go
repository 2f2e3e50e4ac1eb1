package envoyrls

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/transport"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAFailClosedDenialSaysWhenToRetry: with Redis down, a limit on Redis
// under FailClosed denies every request, and its decision knows nothing of
// the key (Remaining and ResetAfter 0) but when Redis is asked again
// (RetryAfter, the breaker's cooldown or the timeout). The denial's
// duration_until_reset and RateLimit-Reset (and the RateLimit item's t)
// must not be 0, for every algorithm but the fixed window, alone or with
// another descriptor in one pipeline: a client that retries at the reset
// would come back at once, to be denied again, as long as Redis stays
// down. A fixed window's reset stays the end of its window.
func TestAFailClosedDenialSaysWhenToRetry(t *testing.T) {
	client := downClient(t)
	cfg := configOf(t, "closed.yaml", `
domain: closed
descriptors:
  - key: tb
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: TokenBucket}
  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: GCRA}
  - key: counter
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: SlidingCounter}
  - key: log
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: SlidingLog}
  - key: window
    rate_limit: {unit: hour, requests_per_unit: 100}
`)
	var now atomic.Int64
	now.Store(t0)
	s := mixedServer(t, cfg, &now, client, redislimit.FailClosed, HeadersReference|HeadersDraft)

	// What FailClosed answers, asked directly.
	lim, err := redislimit.New(client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Hour},
		redislimit.WithFailPolicy(redislimit.FailClosed))
	require.NoError(t, err)
	t.Cleanup(func() { _ = lim.Close() })
	direct, err := lim.TakeContext(context.Background(), "k", 1)
	require.Error(t, err)
	require.False(t, direct.Allowed)
	require.Zero(t, direct.ResetAfter, "FailClosed knows nothing of the key")
	require.Positive(t, direct.RetryAfter)

	retry := strconv.FormatInt(transport.CeilSeconds(direct.RetryAfter), 10)
	resp, got := askKeys(t, s, "closed", false, "tb")
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "FailClosed denies")
	assert.Equal(t, direct.RetryAfter, resp.Statuses[0].DurationUntilReset.AsDuration(), "duration_until_reset of the denial")
	assert.Equal(t, map[string]string{
		"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": retry,
		"RateLimit-Policy": `"tokenbucket-100-1h";q=100;w=3600`, "RateLimit": `"tokenbucket-100-1h";r=0;t=` + retry,
	}, got)

	for _, keys := range [][]string{{"gcra"}, {"counter"}, {"log"}, {"tb", "gcra", "counter", "log"}} {
		resp, got := askKeys(t, s, "closed", false, keys...)
		require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "%v", keys)
		for i, st := range resp.Statuses {
			assert.Equal(t, direct.RetryAfter, st.DurationUntilReset.AsDuration(), "%v: %s's duration_until_reset", keys, keys[i])
		}
		assert.Equal(t, retry, got["RateLimit-Reset"], "%v", keys)
	}

	resp, got = askKeys(t, s, "closed", false, "window", "tb")
	require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode)
	assert.Equal(t, time.Hour-time.Second, resp.Statuses[0].DurationUntilReset.AsDuration(), "a fixed window's reset: the end of its window")
	assert.Equal(t, direct.RetryAfter, resp.Statuses[1].DurationUntilReset.AsDuration(), "beside it in one pipeline")
	assert.Equal(t, "100", got["RateLimit-Limit"])
}

// TestAnUndecidedDenialThatNeverPassesResetsAsADecidedOne: with Redis down,
// hits_addend 101 on a limit of 100 is denied by every failure policy with
// RetryAfter hotlimit.Never (no wait lets it pass), which says nothing of
// when Redis is asked again. Its duration_until_reset and RateLimit-Reset
// are then the key's, as a decided denial of the same request on a fresh
// key reports them (in memory), not Never's 292 years.
func TestAnUndecidedDenialThatNeverPassesResetsAsADecidedOne(t *testing.T) {
	cfg := configOf(t, "never.yaml", `
domain: never
descriptors:
  - key: tb
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: TokenBucket}
  - key: gcra
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: GCRA}
  - key: counter
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: SlidingCounter}
  - key: log
    rate_limit: {unit: hour, requests_per_unit: 100, algorithm: SlidingLog}
`)
	ask := func(s *Server, key string) *pb.RateLimitResponse {
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{
			Domain: "never", HitsAddend: 101, Descriptors: []*rlext.RateLimitDescriptor{desc(key, "v")},
		})
		require.NoError(t, err)
		return resp
	}
	var now atomic.Int64
	now.Store(t0)
	memory, err := New(cfg, WithClock(now.Load), WithHeaders(HeadersReference), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	client := downClient(t)
	for _, policy := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		s := mixedServer(t, cfg, &now, client, policy, HeadersReference)
		for _, key := range []string{"tb", "gcra", "counter", "log"} {
			want := ask(memory, key)
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, want.OverallCode, "%s in memory", key)
			got := ask(s, key)
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, got.OverallCode, "%v: %s", policy, key)
			assert.Equal(t, want.Statuses[0].DurationUntilReset.AsDuration(), got.Statuses[0].DurationUntilReset.AsDuration(), "%v: %s's duration_until_reset", policy, key)
			assert.Equal(t, headersOf(want), headersOf(got), "%v: %s's headers", policy, key)
		}
	}
}
