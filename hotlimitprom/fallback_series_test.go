package hotlimitprom_test

import (
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// increase is what PromQL's increase() sees of a counter between two
// scrapes: the difference of its values, or nothing for a series the first
// scrape did not hold, whose first sample it counts nothing into.
func increase(before, after scrape, name string, labels ...string) float64 {
	key := seriesKey(name, labels...)
	first, ok := before.series[key]
	if !ok {
		return 0
	}
	return after.series[key] - first
}

// fallbackServer serves the metrics of a service on a backend, or in
// memory when backend is nil.
func fallbackServer(t *testing.T, backend *limitertest.Fallible) (*service.Service, string) {
	t.Helper()
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	opts := []hotlimit.Option{hotlimit.WithClock(new(atomic.Int64).Load), hotlimit.WithObserver(m)}
	if backend != nil {
		opts = append(opts, hotlimit.WithFactory(backend.Factory(service.NewLimiter)))
	}
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}, opts...)
	require.NoError(t, err)
	return svc, srv.URL + "/metrics"
}

// TestOperatorFirstFallbackIsSeenByIncrease: an operator alerts on
// increase(hotlimit_fallbacks_total[5m]) > 0. A service whose limits are on
// Redis is scraped before its first fallback and after it: every reason's
// series is there at 0 from the service's start, so that increase() between
// the two scrapes, which counts nothing into a series' first sample, sees
// the first outage, of one fallback.
func TestOperatorFirstFallbackIsSeenByIncrease(t *testing.T) {
	var backend limitertest.Fallible
	svc, url := fallbackServer(t, &backend)
	require.True(t, svc.Allow("alice", "GET /"))
	before := scrapeOver(t, url)
	for _, reason := range hotlimit.FallbackReasons() {
		assert.Zero(t, before.get(t, "hotlimit_fallbacks_total", "backend", "redis", "reason", reason), "before any fallback")
	}

	backend.Fail("timeout")
	require.True(t, svc.Allow("alice", "GET /"))
	backend.Recover()
	after := scrapeOver(t, url)
	assert.Equal(t, 1.0, increase(before, after, "hotlimit_fallbacks_total", "backend", "redis", "reason", "timeout"),
		"increase() sees the first fallback")
	assert.Zero(t, increase(before, after, "hotlimit_fallbacks_total", "backend", "redis", "reason", "breaker_open"))
}

// TestNoBackendNoFallbackSeries: a service with its limits in memory, which
// never falls back, exports no hotlimit_fallbacks_total series at all.
func TestNoBackendNoFallbackSeries(t *testing.T) {
	svc, url := fallbackServer(t, nil)
	require.True(t, svc.Allow("alice", "GET /"))
	for key := range scrapeOver(t, url).series {
		assert.False(t, strings.HasPrefix(key, "hotlimit_fallbacks_total"), "%s", key)
	}
}
