package hotlimitotel_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
)

// throughPrometheus returns Metrics whose meter is read by OpenTelemetry's
// Prometheus exporter into reg, without the scope's labels.
func throughPrometheus(t *testing.T) (*hotlimitotel.Metrics, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m, reg
}

// TestNamesThroughThePrometheusExporter pins the names and labels the
// README gives for the instruments as OpenTelemetry's Prometheus exporter
// writes them, which its queries use.
func TestNamesThroughThePrometheusExporter(t *testing.T) {
	m, reg := throughPrometheus(t)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 2})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.WatchKeys("api", func() int { return 3 })
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_fallbacks_total Number of decisions a backend could not make, made by its failure policy instead, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{hotlimit_backend="redis",hotlimit_fallback_reason="timeout"} 1
# HELP hotlimit_key_count Number of keys held by a limiter or service.
# TYPE hotlimit_key_count gauge
hotlimit_key_count{hotlimit_limiter="api"} 3
`), "hotlimit_fallbacks_total", "hotlimit_key_count"))
	n, err := testutil.GatherAndCount(reg, "hotlimit_decisions_total", "hotlimit_requests_total")
	require.NoError(t, err)
	require.Equal(t, 2*4, n)
	// Prometheus' lint keeps _count for histograms and summaries; the
	// semantic conventions name an UpDownCounter of things .count (as
	// jvm.thread.count), and the README says so. Nothing else is flagged.
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Len(t, problems, 1, "%v", problems)
	require.Equal(t, "hotlimit_key_count", problems[0].Metric)
}

// TestARulesOutcomesStartAtZero: a rule's four outcomes are reported from
// its first decision, at 0 until they happen, so that a Prometheus rate()
// or increase() over the exporter's series sees the first denial (it
// counts no increase into a series' first sample).
func TestARulesOutcomesStartAtZero(t *testing.T) {
	m, reg := throughPrometheus(t)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1})
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_decisions_total Number of rate-limit decisions, by the rule that decided and their outcome.
# TYPE hotlimit_decisions_total counter
hotlimit_decisions_total{hotlimit_outcome="allowed",hotlimit_rule="default"} 1
hotlimit_decisions_total{hotlimit_outcome="denied",hotlimit_rule="default"} 0
hotlimit_decisions_total{hotlimit_outcome="near_limit",hotlimit_rule="default"} 0
hotlimit_decisions_total{hotlimit_outcome="shadow_denied",hotlimit_rule="default"} 0
`), "hotlimit_decisions_total"))
	// A decision whose Outcome names none shows only once it happens.
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, N: 1})
	n, err := testutil.GatherAndCount(reg, "hotlimit_decisions_total")
	require.NoError(t, err)
	require.Equal(t, 5, n)
}

// TestNamesNotValidUTF8DoNotFailTheScrape: a rule, backend, reason or
// limiter name that is not valid UTF-8, which Prometheus (and OTLP's
// protobuf) refuses, is reported with U+FFFD in place of each invalid byte
// sequence, as hotlimitprom does, so that the scrape, of every metric of
// the process, still succeeds.
func TestNamesNotValidUTF8DoNotFailTheScrape(t *testing.T) {
	m, reg := throughPrometheus(t)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "r\xff"}, Outcome: hotlimit.OutcomeDenied, N: 2})
	m.ObserveFallback(hotlimit.Fallback{Backend: "b\xfe", Reason: "\xc0why"})
	m.WatchKeys("l\xff\xfe", func() int { return 3 })
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_requests_total Number of requests decided (a decision on n requests counts n), by the rule that decided and their outcome.
# TYPE hotlimit_requests_total counter
hotlimit_requests_total{hotlimit_outcome="allowed",hotlimit_rule="r�"} 0
hotlimit_requests_total{hotlimit_outcome="denied",hotlimit_rule="r�"} 2
hotlimit_requests_total{hotlimit_outcome="near_limit",hotlimit_rule="r�"} 0
hotlimit_requests_total{hotlimit_outcome="shadow_denied",hotlimit_rule="r�"} 0
# HELP hotlimit_fallbacks_total Number of decisions a backend could not make, made by its failure policy instead, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{hotlimit_backend="b�",hotlimit_fallback_reason="�why"} 1
# HELP hotlimit_key_count Number of keys held by a limiter or service.
# TYPE hotlimit_key_count gauge
hotlimit_key_count{hotlimit_limiter="l�"} 3
`), "hotlimit_requests_total", "hotlimit_fallbacks_total", "hotlimit_key_count"))
}
