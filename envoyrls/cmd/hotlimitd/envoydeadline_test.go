package main

import (
	"context"
	"io"
	"regexp"
	"strconv"
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
// Envoy's own default is 20 ms. Redis first decides a request, on a key of
// its own each time it is asked (a call that outlasts the 10 ms, which the
// first, loading the script, may on a loaded machine under -race, is a
// timeout that Redis may still count): the counts below are those of the
// requests after it.
func TestDefaultRedisTimeoutAnswersBeforeEnvoysDeadline(t *testing.T) {
	redisAddr, _ := startRedis(t, "")
	proxy := newHoldingProxy(t, redisAddr)
	dir := t.TempDir()
	writeRule(t, dir, "3")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", proxy.addr,
		"-redis-failure", "closed", "-redis-prefix", t.Name() + ":"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	ask := func(ctx context.Context, ip string) (*pb.RateLimitResponse, error) {
		return client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: ip}}}}})
	}
	tries := 0
	require.Eventually(t, func() bool { // polling, with a deadline: until Redis answers within the 10 ms
		tries++
		resp, err := ask(context.Background(), "first-"+strconv.Itoa(tries))
		return err == nil && resp.OverallCode == pb.RateLimitResponse_OK
	}, 30*time.Second, 10*time.Millisecond, "Redis decides")
	before := fallbackCounts(t, srv)

	proxy.hold() // and never released: Redis does not answer
	for i := range 4 {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		resp, err := ask(ctx, "1")
		cancel()
		require.NoError(t, err, "request %d: answered before the caller's deadline", i+1)
		assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "request %d: -redis-failure closed", i+1)
	}
	after := fallbackCounts(t, srv)
	assert.Equal(t, 3, after["timeout"]-before["timeout"], "three timeouts open the breaker")
	assert.Equal(t, 1, after["breaker_open"]-before["breaker_open"], "the fourth is answered without asking Redis")
}

// fallbackCounts returns hotlimit_fallbacks_total on srv's /metrics by
// reason.
func fallbackCounts(t *testing.T, srv *server) map[string]int {
	t.Helper()
	counts := map[string]int{}
	for _, line := range fallbackSeries(t, srv) {
		m := regexp.MustCompile(`^hotlimit_fallbacks_total\{backend="redis",reason="([a-z_]+)"\} (\d+)$`).FindStringSubmatch(line)
		require.NotNil(t, m, "a series of Redis's fallbacks: %s", line)
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		counts[m[1]] = n
	}
	require.NotEmpty(t, counts)
	return counts
}
