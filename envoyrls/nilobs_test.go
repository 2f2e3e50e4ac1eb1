package envoyrls

import (
	"context"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestNilObserverFuncReportsNothing: WithObserver of a nil
// hotlimit.ObserverFunc is no observer, as hotlimit.WithObserver's is:
// decisions are answered, not a panic on calling the nil function.
func TestNilObserverFuncReportsNothing(t *testing.T) {
	h := inProcess(t, WithObserver(hotlimit.ObserverFunc(nil)))
	assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
}

// TestNilMetricsReportsNothing: WithObserver of a nil *Metrics, as a
// program passes one it builds only when metrics are on, is no observer
// either: the server is built, reloads and answers, where it panicked on
// the nil Metrics.
func TestNilMetricsReportsNothing(t *testing.T) {
	var m *Metrics
	var h *harness
	require.NotPanics(t, func() { h = inProcess(t, WithObserver(m)) }, "New")
	require.NotPanics(t, func() {
		assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
	})
	require.NotPanics(t, func() { assert.NoError(t, h.srv.ReloadDir(h.dir)) }, "Reload")
}

// countingObserver counts the events it hears; a nil *countingObserver
// would panic on its first.
type countingObserver struct{ n int }

func (o *countingObserver) Observe(hotlimit.Event) { o.n++ }

// TestNilPointerObserverReportsNothing: WithObserver of a nil pointer of
// the caller's own observer type is no observer, as hotlimit.WithObserver's
// is: decisions are answered, not a panic in the observer's method.
func TestNilPointerObserverReportsNothing(t *testing.T) {
	var o *countingObserver
	var h *harness
	require.NotPanics(t, func() { h = inProcess(t, WithObserver(o)) }, "New")
	require.NotPanics(t, func() {
		assert.Equal(t, ok, h.call(t, "conf", 0, desc("hits", "v")).OverallCode, "decided and answered")
	})
}

// TestShadowDenialIsObservedAsPassed: a descriptor over a rule in shadow
// mode is answered OK, and its Event says so, as a service's shadow limit
// reports one: Outcome shadow_denied, with the Decision the caller got,
// allowed with no wait, and the rule's own numbers.
func TestShadowDenialIsObservedAsPassed(t *testing.T) {
	var events []hotlimit.Event
	h := inProcess(t, WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) { events = append(events, e) })))
	for range 2 {
		assert.Equal(t, ok, h.call(t, "conf", 0, desc("shadow", "v")).OverallCode, "shadow mode answers OK")
	}
	require.Len(t, events, 2)
	assert.Equal(t, hotlimit.OutcomeNearLimit, events[0].Outcome, "the first of one per hour, the last one")
	e := events[1]
	assert.Equal(t, hotlimit.OutcomeShadowDenied, e.Outcome)
	assert.True(t, e.Decision.Allowed, "the caller passed")
	assert.Zero(t, e.Decision.RetryAfter, "nothing to wait for")
	assert.Equal(t, 1, e.Decision.Limit)
	assert.Zero(t, e.Decision.Remaining)
}

// TestNilMetricsObservesNoDecisionNorFallback: a nil *Metrics given to the
// backend's limiters for their fallbacks, as Metrics says to give it,
// observes nothing either: a request Redis fails (here, none listens) gets
// the backend's answer, where the fallback's report panicked on the nil
// Metrics; nor does it observe the decisions of a service.Service given it.
func TestNilMetricsObservesNoDecisionNorFallback(t *testing.T) {
	var m *Metrics
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}) // a port none listens on
	t.Cleanup(func() { _ = client.Close() })
	f := redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailOpen), hotlimit.WithObserver(m))
	for _, errs := range []bool{true, false} {
		h := inProcess(t, WithObserver(m), WithBackendErrors(errs), WithLimiterOptions(hotlimit.WithFactory(f)))
		var err error
		var resp *pb.RateLimitResponse
		require.NotPanics(t, func() {
			resp, err = h.srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("per_hour", "x")}})
		}, "backend errors %v", errs)
		if errs {
			assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, ok, resp.OverallCode, "FailOpen's answer")
	}

	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}, hotlimit.WithObserver(m))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	require.NotPanics(t, func() { assert.True(t, svc.Allow("u", "a")) }, "a service's decision")
}

// TestNilMetricsMethodsDoNothing: every method of a nil *Metrics is a
// no-op, as Observe and ObserveFallback are, so a program that builds its
// Metrics only when metrics are on can call them unconditionally: a
// registry gathers nothing from it rather than panicking.
func TestNilMetricsMethodsDoNothing(t *testing.T) {
	var m *Metrics
	require.NotPanics(t, func() {
		m.ConfigLoaded(true)
		m.ConfigLoaded(false)
		m.ObserveBackend("redis")
		m.WatchKeys("hotlimitd", func() int { return 1 })
		m.WatchKeys("hotlimitd", nil)
	})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	require.NotPanics(t, func() {
		families, err := reg.Gather()
		assert.NoError(t, err)
		assert.Empty(t, families, "nothing to gather")
	})
}

// TestAZeroMetricsIsRefused: a Metrics declared rather than made by
// NewMetrics (a struct field of type envoyrls.Metrics, say) has none of its
// counters. A Server given it, alone or among hotlimit.Observers, and a
// registry are refused with an error that says to call NewMetrics, rather
// than a panic in the first decision or scrape (so are a Redis factory's
// limiters, see hotlimit.CheckObserver); its methods do nothing.
func TestAZeroMetricsIsRefused(t *testing.T) {
	var m Metrics
	cfg, err := LoadDir(copyDir(t, "testdata/conformance"))
	require.NoError(t, err)
	for name, o := range map[string]hotlimit.Observer{"alone": &m, "among others": hotlimit.Observers(hotlimit.ObserverFunc(func(hotlimit.Event) {}), &m)} {
		var srv *Server
		require.NotPanics(t, func() { srv, err = New(cfg, WithObserver(o)) }, name)
		require.Error(t, err, name)
		assert.Nil(t, srv, name)
		assert.Contains(t, err.Error(), "envoyrls.NewMetrics", name)
	}
	err = prometheus.NewPedanticRegistry().Register(&m)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "envoyrls.NewMetrics")
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "conf.hits"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		m.ObserveBackend("redis")
		m.ConfigLoaded(true)
		m.WatchKeys("api", func() int { return 1 })
		ch := make(chan prometheus.Metric, 64)
		m.Collect(ch)
		close(ch)
		assert.Empty(t, ch)
	})
}
