package envoyrls

import (
	"context"
	"log/slog"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFallbackSeriesFromTheConfiguration: a server whose rules keep their
// state on Redis, wired as hotlimitd wires it (the Metrics given to the
// server and to redislimit.Factory), exports every reason's fallbacks at 0
// as soon as its configuration is in force, before any request, so that
// increase(hotlimit_fallbacks_total[5m]), which counts nothing into a
// series' first sample, sees the first fallback; with the rules in memory
// it exports none.
func TestFallbackSeriesFromTheConfiguration(t *testing.T) {
	cfg, err := LoadDir("testdata/conformance")
	require.NoError(t, err)
	// fallbacks gathers m: the value of each series by reason.
	fallbacks := func(m *Metrics) map[string]float64 {
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(m))
		families, err := reg.Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "hotlimit_fallbacks_total" {
				continue
			}
			for _, series := range f.GetMetric() {
				l := series.GetLabel()
				require.Equal(t, "redis", l[0].GetValue())
				out[l[1].GetValue()] = series.GetCounter().GetValue()
			}
		}
		return out
	}

	inMemory := NewMetrics()
	_, err = New(cfg, WithObserver(inMemory), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	assert.Empty(t, fallbacks(inMemory), "no backend, no fallback series")

	m := NewMetrics()
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // New does not contact Redis
	t.Cleanup(func() { _ = client.Close() })
	s, err := New(cfg, WithObserver(m), WithBackendErrors(false), WithLogger(slog.New(slog.DiscardHandler)),
		WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailOpen), hotlimit.WithObserver(m)))))
	require.NoError(t, err)
	before := fallbacks(m)
	zeros := map[string]float64{}
	for _, r := range hotlimit.FallbackReasons() {
		zeros[r] = 0
	}
	assert.Equal(t, zeros, before, "before any request")

	resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("per_hour", "f")}})
	require.NoError(t, err)
	assert.Equal(t, ok, resp.OverallCode, "FailOpen answers OK")
	after, increase := fallbacks(m), 0.0
	for r, v := range after {
		increase += v - before[r]
	}
	assert.Len(t, after, len(zeros))
	assert.Equal(t, 1.0, increase, "Redis could not decide, once: %v", after)
}
