package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFallbackSeriesWithoutALimitOfTheConfiguration: with -redis, the
// fallback series are on /metrics at 0 from the start, also when no rule
// of the configuration has a limit and every limiter on Redis is one of a
// descriptor's own limit (an override), built at its first request. Were
// they made by that limiter, a first request that Redis could not decide
// would start them at 1, and increase(hotlimit_fallbacks_total[5m]), which
// counts nothing into a series' first sample, would miss it.
func TestFallbackSeriesWithoutALimitOfTheConfiguration(t *testing.T) {
	addr, redisServer := startRedis(t, "")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("domain: web\ndescriptors:\n  - key: ip\n"), 0o644))
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", addr,
		"-redis-failure", "open", "-redis-prefix", t.Name() + ":"}, io.Discard)
	var zeros []string
	for _, reason := range hotlimit.FallbackReasons() {
		zeros = append(zeros, `hotlimit_fallbacks_total{backend="redis",reason="`+reason+`"} 0`)
	}
	assert.ElementsMatch(t, zeros, fallbackSeries(t, srv), "before any request")

	redisServer.Kill()
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
		Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE},
	}}}
	resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "-redis-failure open lets it through")
	after, ones := fallbackSeries(t, srv), 0
	for _, line := range after {
		if strings.HasSuffix(line, "} 1") {
			ones++
		}
	}
	assert.Len(t, after, len(zeros))
	assert.Equal(t, 1, ones, "one reason moved from 0 to 1: %v", after)
}

// TestNoFallbackSeriesInMemory: without -redis, hotlimitd exports no
// hotlimit_fallbacks_total series, neither at start nor after requests of
// a rule's limit and of a descriptor's own: no limiter of it can fall back,
// and a series at 0 of a backend it does not use would say it has one.
func TestNoFallbackSeriesInMemory(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`
domain: web
descriptors:
  - key: ip
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 5}
`), 0o644))
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, io.Discard)
	assert.Empty(t, fallbackSeries(t, srv), "at start")
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{
		{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
			Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE},
		},
		{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "user", Value: "1"}}},
	}}
	resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	assert.Empty(t, fallbackSeries(t, srv), "after requests")
}

// fallbackSeries returns the hotlimit_fallbacks_total lines of srv's
// /metrics.
func fallbackSeries(t *testing.T, srv *server) []string {
	t.Helper()
	res, err := http.Get("http://" + srv.http + "/metrics")
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var lines []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "hotlimit_fallbacks_total{") {
			lines = append(lines, strings.TrimSpace(line))
		}
	}
	return lines
}
