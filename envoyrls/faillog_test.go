package envoyrls

import (
	"bytes"
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestBackendFailureWarningsAreBounded: a backend that fails every request
// gets every request an Unavailable error, but the warnings in the log
// stop at failLogBurst at once and come back at failLogRate a second, the
// first line after a pause saying how many failures went unlogged: a Redis
// down under a flood of requests does not write a line a request.
func TestBackendFailureWarningsAreBounded(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(int64(time.Hour))
	var buf bytes.Buffer
	down := func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		return &limitertest.UnreachableRefunder{}, nil
	}
	s, err := New(cfg, WithClock(now.Load), WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))),
		WithLimiterOptions(hotlimit.WithFactory(down)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{desc("ip", "192.0.2.1")}}
	failures := func(requests int) []map[string]any {
		t.Helper()
		buf.Reset()
		for range requests {
			_, err := s.ShouldRateLimit(context.Background(), req)
			require.Equal(t, codes.Unavailable, status.Code(err), "every request gets the backend's failure: %v", err)
		}
		return logLines(buf.String(), "rate limit backend failed")
	}

	lines := failures(3 * failLogBurst)
	require.Len(t, lines, failLogBurst, "a burst of warnings, then none")
	for _, l := range lines {
		assert.Equal(t, "web.ip", l["rule"])
		assert.Contains(t, l["err"], limitertest.ErrUnreachable.Error())
		assert.NotContains(t, l, "unlogged", "none held back yet")
	}
	now.Add(int64(time.Second / failLogRate))
	lines = failures(5)
	require.Len(t, lines, 1, "one warning a second")
	assert.Equal(t, float64(2*failLogBurst), lines[0]["unlogged"], "the failures held back before it")
	now.Add(int64(time.Second / failLogRate))
	lines = failures(1)
	require.Len(t, lines, 1)
	assert.Equal(t, float64(4), lines[0]["unlogged"], "the 4 held back since the last line")
	now.Add(int64(time.Second / failLogRate))
	lines = failures(1)
	require.Len(t, lines, 1)
	assert.NotContains(t, lines[0], "unlogged", "none held back since the last line")
}
