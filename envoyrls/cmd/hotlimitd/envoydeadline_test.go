package main

import (
	"context"
	"io"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultRedisTimeoutAnswersBeforeEnvoysDeadline: with the default
// -redis-timeout, a Redis that stops answering gets each request the
// failure policy's answer while a caller of Envoy's kind still waits, and
// those failures open the circuit breaker, so that the next requests are
// answered without waiting. The callers' deadline here is 50 ms: past the
// default, for a loaded machine's slack, and short of redislimit's own
// 100 ms, under which every request would end at its deadline
// (DeadlineExceeded), counted as no failure, and the breaker never open.
// Envoy's own default is 20 ms.
func TestDefaultRedisTimeoutAnswersBeforeEnvoysDeadline(t *testing.T) {
	redisAddr, _ := startRedis(t, "")
	proxy := newHoldingProxy(t, redisAddr)
	dir := t.TempDir()
	writeRule(t, dir, "3")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", proxy.addr,
		"-redis-failure", "closed", "-redis-prefix", t.Name() + ":"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	resp, err := client.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "Redis decides")

	proxy.hold() // and never released: Redis does not answer
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		resp, err := client.ShouldRateLimit(ctx, req)
		cancel()
		require.NoError(t, err, "request %d: answered before the caller's deadline", i+1)
		assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "request %d: -redis-failure closed", i+1)
	}
	series := fallbackSeries(t, srv)
	assert.Contains(t, series, `hotlimit_fallbacks_total{backend="redis",reason="timeout"} 3`, "three timeouts open the breaker")
	assert.Contains(t, series, `hotlimit_fallbacks_total{backend="redis",reason="breaker_open"} 1`, "the fourth is answered without asking Redis")
}
