package hotlimitotel_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// fallbackPage serves, through OpenTelemetry's Prometheus exporter, the
// metrics of a service on a backend, or in memory when backend is nil.
func fallbackPage(t *testing.T, backend *limitertest.Fallible) (*service.Service, http.Handler) {
	t.Helper()
	m, reg := throughPrometheus(t)
	opts := []hotlimit.Option{hotlimit.WithClock(new(atomic.Int64).Load), hotlimit.WithObserver(m)}
	if backend != nil {
		opts = append(opts, hotlimit.WithFactory(backend.Factory(service.NewLimiter)))
	}
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}, opts...)
	require.NoError(t, err)
	return svc, promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError})
}

// TestOperatorFirstFallbackIsSeenByIncrease: an operator alerts on
// increase(hotlimit_fallbacks_total[5m]) > 0, scraping the OpenTelemetry
// Prometheus exporter. A service whose limits are on Redis is scraped
// before its first fallback and after it: every reason's series is there
// at 0 from the service's start, so that increase() between the two
// scrapes, which counts nothing into a series' first sample, sees the first
// outage, of one fallback.
func TestOperatorFirstFallbackIsSeenByIncrease(t *testing.T) {
	var backend limitertest.Fallible
	svc, page := fallbackPage(t, &backend)
	require.True(t, svc.Allow("alice", "GET /"))
	before := scrapeCounts(t, page, true)
	for _, reason := range hotlimit.FallbackReasons() {
		v, ok := before["fallbacks redis "+reason]
		require.True(t, ok, "no series of reason %s before any fallback", reason)
		assert.Zero(t, v, reason)
	}

	backend.Fail("timeout")
	require.True(t, svc.Allow("alice", "GET /"))
	backend.Recover()
	after := scrapeCounts(t, page, true)
	assert.Equal(t, 1.0, after["fallbacks redis timeout"]-before["fallbacks redis timeout"], "increase() sees the first fallback")
	assert.Zero(t, after["fallbacks redis breaker_open"])
}

// TestNoBackendNoFallbackSeries: a service with its limits in memory, which
// never falls back, exports no hotlimit.fallbacks point at all.
func TestNoBackendNoFallbackSeries(t *testing.T) {
	svc, page := fallbackPage(t, nil)
	require.True(t, svc.Allow("alice", "GET /"))
	for key := range scrapeCounts(t, page, true) {
		assert.False(t, strings.HasPrefix(key, "fallbacks "), "%s", key)
	}
}
