package limitertest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// Metrics is a metrics module's Metrics as its producers see it: a
// hotlimit.BackendObserver that also watches a count of keys.
type Metrics interface {
	hotlimit.BackendObserver
	WatchKeys(name string, keys func() int)
}

// Service is the part of a service.Service that MetricsThatRecordNothing
// asks.
type Service interface {
	Allow(user, api string) bool
	Take(user, api string, n int) hotlimit.Decision
	Len() int
}

// MetricsThatRecordNothing is for the metrics modules' Metrics that cannot
// record (a nil *Metrics, or one declared rather than made by New): svc, a
// service whose only limit is a token bucket of 2 per minute and whose
// observer is m, decides as without an observer (it allows twice, then
// denies), and m's methods, called directly as a producer that holds the
// observer as given does (envoyrls.WithObserver), never panic.
func MetricsThatRecordNothing(t *testing.T, svc Service, m Metrics) {
	t.Helper()
	require.NotPanics(t, func() {
		assert.True(t, svc.Allow("u", "a"))
		assert.True(t, svc.Take("u", "a", 1).Allowed)
		assert.False(t, svc.Take("u", "a", 1).Allowed)
		// Producers that hold the observer as given, not through
		// hotlimit.NewOptions, call it directly.
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		m.ObserveBackend("redis")
		m.WatchKeys("api", svc.Len)
	})
}
