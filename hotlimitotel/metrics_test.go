package hotlimitotel_test

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/service"
)

// setup returns metrics recording into a manual reader.
func setup(t *testing.T) (*hotlimitotel.Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	m, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	return m, reader
}

// twoOnOneMeter returns two Metrics on one meter, recording into one manual
// reader.
func twoOnOneMeter(t *testing.T) (a, b *hotlimitotel.Metrics, reader *sdkmetric.ManualReader) {
	t.Helper()
	reader = sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	var err error
	a, err = hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	b, err = hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	return a, b, reader
}

// sums collects the reader and returns instrument -> "attr=v,attr=v" -> value.
func sums(t *testing.T, reader *sdkmetric.ManualReader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			series := map[string]int64{}
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range data.DataPoints {
					series[attrs(p.Attributes)] = p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range data.DataPoints {
					series[attrs(p.Attributes)] = p.Value
				}
			}
			out[m.Name] = series
		}
	}
	return out
}

// nonZero returns the points of series whose value is not 0.
func nonZero(series map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for p, v := range series {
		if v != 0 {
			out[p] = v
		}
	}
	return out
}

func attrs(s attribute.Set) string {
	out := ""
	for _, kv := range s.ToSlice() {
		if out != "" {
			out += ","
		}
		out += string(kv.Key) + "=" + kv.Value.String()
	}
	return out
}

func TestMetricsAfterAKnownSequence(t *testing.T) {
	m, reader := setup(t)
	for _, e := range []hotlimit.Event{
		{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1},
		{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1},
		{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeNearLimit, N: 1},
		{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 1},
		{Source: &hotlimit.Source{Rule: `apis["GET /pay"]`}, Outcome: hotlimit.OutcomeShadowDenied, N: 3},
		{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 0}, // a report counts a decision, no request
	} {
		m.Observe(e)
	}
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.WatchKeys("api", func() int { return 42 })
	m.WatchKeys("gone", func() int { return 1 })
	m.WatchKeys("gone", nil)

	got := sums(t, reader)
	assert.Equal(t, map[string]int64{
		"hotlimit.outcome=allowed,hotlimit.rule=default":                3,
		"hotlimit.outcome=near_limit,hotlimit.rule=default":             1,
		"hotlimit.outcome=denied,hotlimit.rule=default":                 1,
		`hotlimit.outcome=shadow_denied,hotlimit.rule=apis["GET /pay"]`: 1,
	}, nonZero(got["hotlimit.decisions"]))
	assert.Equal(t, map[string]int64{
		"hotlimit.outcome=allowed,hotlimit.rule=default":                2,
		"hotlimit.outcome=near_limit,hotlimit.rule=default":             1,
		"hotlimit.outcome=denied,hotlimit.rule=default":                 1,
		`hotlimit.outcome=shadow_denied,hotlimit.rule=apis["GET /pay"]`: 3,
	}, nonZero(got["hotlimit.requests"]))
	assert.Equal(t, map[string]int64{"hotlimit.backend=redis,hotlimit.fallback.reason=timeout": 2}, got["hotlimit.fallbacks"])
	assert.Equal(t, map[string]int64{"hotlimit.limiter=api": 42}, got["hotlimit.key.count"])
}

func TestObserveCountsEveryDecisionConcurrently(t *testing.T) {
	m, reader := setup(t)
	const goroutines, each = 8, 2000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: []string{"a", "b"}[(g+i)%2]}, Outcome: hotlimit.OutcomeDenied, N: 1})
			}
		})
	}
	wg.Wait()
	got := sums(t, reader)["hotlimit.decisions"]
	assert.Equal(t, int64(goroutines*each/2), got["hotlimit.outcome=denied,hotlimit.rule=a"])
	assert.Equal(t, int64(goroutines*each/2), got["hotlimit.outcome=denied,hotlimit.rule=b"])
	assert.NotPanics(t, func() { m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "a"}, Outcome: 99}) })
}

// TestEventWithoutASource: an Event that names no Source is recorded under
// the rule "", never a panic.
func TestEventWithoutASource(t *testing.T) {
	m, reader := setup(t)
	assert.NotPanics(t, func() { m.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied, N: 2}) })
	assert.Equal(t, int64(2), sums(t, reader)["hotlimit.requests"]["hotlimit.outcome=denied,hotlimit.rule="])
}

// BenchmarkObserve times Observe (impl=hotlimitotel) against recording the
// same decision with the SDK's synchronous counters (impl=sdk-sync-add: an
// Add to the decisions and one to the requests, under the rule and outcome
// attributes), what the asynchronous instruments spare each decision.
func BenchmarkObserve(b *testing.B) {
	b.Run("impl=hotlimitotel", func(b *testing.B) {
		reader := sdkmetric.NewManualReader()
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		m, err := hotlimitotel.New(provider.Meter("hotlimit"))
		require.NoError(b, err)
		e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Observe(e)
			}
		})
	})
	b.Run("impl=sdk-sync-add", func(b *testing.B) {
		reader := sdkmetric.NewManualReader()
		meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("hotlimit")
		decisions, err := meter.Int64Counter("hotlimit.decisions")
		require.NoError(b, err)
		requests, err := meter.Int64Counter("hotlimit.requests")
		require.NoError(b, err)
		attrs := metric.WithAttributeSet(attribute.NewSet(
			attribute.String("hotlimit.rule", "default"), attribute.String("hotlimit.outcome", "allowed")))
		ctx := context.Background()
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				decisions.Add(ctx, 1, attrs)
				requests.Add(ctx, 1, attrs)
			}
		})
	})
}

func TestObserveDoesNotAllocate(t *testing.T) {
	m, _ := setup(t)
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1}
	m.Observe(e)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { m.Observe(e) }))
}

func TestNewRejectsANilMeter(t *testing.T) {
	m, err := hotlimitotel.New(nil)
	assert.ErrorContains(t, err, "hotlimitotel: meter is nil")
	assert.Nil(t, m)
}

// ptrMeter is a Meter whose nil pointer panics at every method.
type ptrMeter struct{ noop.Meter }

// TestNewRejectsAMeterHoldingNil: a meter that holds a nil pointer (a
// program's meter variable never set) is a nil meter, an error, not a panic
// inside New.
func TestNewRejectsAMeterHoldingNil(t *testing.T) {
	var meter *ptrMeter
	var m *hotlimitotel.Metrics
	var err error
	require.NotPanics(t, func() { m, err = hotlimitotel.New(meter) })
	assert.ErrorContains(t, err, "hotlimitotel: meter is nil")
	assert.Nil(t, m)
}

// A service reporting to the metrics, end to end: what the manual reader
// collects equals the service's decisions, rule by rule.
func TestServiceDecisionsThroughAManualReader(t *testing.T) {
	m, reader := setup(t)
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
	  "apis":    {"GET /new": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]},
	  "users":   {"health-check": [{"algorithm": "Unlimited"}]}
	}`))
	require.NoError(t, err)
	var now atomic.Int64 // a frozen fake clock
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	require.NoError(t, err)
	m.WatchKeys("api", svc.Len)
	passed := 0
	for range 5 {
		for _, call := range [][2]string{{"alice", "GET /"}, {"alice", "GET /new"}, {"health-check", "GET /"}} {
			if svc.Allow(call[0], call[1]) {
				passed++
			}
		}
	}
	assert.Equal(t, 13, passed, "all but alice's 4th and 5th on GET /")

	got := sums(t, reader)
	assert.Equal(t, map[string]int64{
		"hotlimit.outcome=allowed,hotlimit.rule=default":                2,
		"hotlimit.outcome=near_limit,hotlimit.rule=default":             1,
		"hotlimit.outcome=denied,hotlimit.rule=default":                 2,
		`hotlimit.outcome=allowed,hotlimit.rule=apis["GET /new"]`:       1,
		`hotlimit.outcome=near_limit,hotlimit.rule=apis["GET /new"]`:    1,
		`hotlimit.outcome=shadow_denied,hotlimit.rule=apis["GET /new"]`: 3,
		`hotlimit.outcome=allowed,hotlimit.rule=users["health-check"]`:  5,
	}, nonZero(got["hotlimit.decisions"]))
	assert.Equal(t, got["hotlimit.decisions"], got["hotlimit.requests"], "each decision was on one request")
	assert.Equal(t, map[string]int64{"hotlimit.limiter=api": 2}, got["hotlimit.key.count"], "alice's two pairs; the allow-list keeps none")
}

// TestRequestsNeverGoDown: decisions on math.MaxInt requests, which the
// service reports as it does any (denied, counted n), would overflow a
// 64-bit count at the second: the requests counted stop at 2^63−1
// instead, and the counter, as a collection reads it, never goes down.
func TestRequestsNeverGoDown(t *testing.T) {
	m, reader := setup(t)
	huge := hotlimit.Event{Source: &hotlimit.Source{Rule: "r"}, Outcome: hotlimit.OutcomeDenied, N: math.MaxInt}
	const denied = "hotlimit.outcome=denied,hotlimit.rule=r"
	last := int64(0)
	for i := range 4 {
		m.Observe(huge)
		m.Observe(hotlimit.Event{Source: huge.Source, Outcome: hotlimit.OutcomeDenied, N: 1})
		v := sums(t, reader)["hotlimit.requests"][denied]
		require.GreaterOrEqual(t, v, last, "after %d huge decisions", i+1)
		last = v
	}
	if math.MaxInt == math.MaxInt64 {
		assert.Equal(t, int64(math.MaxInt64), last, "stops at 2^63−1")
	}
	assert.Equal(t, int64(8), sums(t, reader)["hotlimit.decisions"][denied], "every decision counted")
}

// TestRequestsNeverGoDownConcurrently: decisions on huge and on single
// requests from several goroutines, read by collections meanwhile: no
// collection reads less than the one before, and the count ends at 2^63−1.
func TestRequestsNeverGoDownConcurrently(t *testing.T) {
	m, reader := setup(t)
	src := &hotlimit.Source{Rule: "r"}
	const denied = "hotlimit.outcome=denied,hotlimit.rule=r"
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				n := 1
				if (g+i)%2 == 0 {
					n = math.MaxInt / 3
				}
				m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeDenied, N: n})
			}
		})
	}
	last := int64(0)
	for range 50 {
		v := sums(t, reader)["hotlimit.requests"][denied]
		require.GreaterOrEqual(t, v, last)
		last = v
	}
	wg.Wait()
	if math.MaxInt == math.MaxInt64 {
		assert.Equal(t, int64(math.MaxInt64), sums(t, reader)["hotlimit.requests"][denied])
	}
}
