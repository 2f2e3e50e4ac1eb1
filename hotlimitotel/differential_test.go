package hotlimitotel_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitotel"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/service"
)

// differentialRules: single-limit rules, whose outcomes under a frozen
// clock are the same whatever the interleaving (each allowed request takes
// one more of the same quota), and a rule of two limits.
const differentialRules = `{
  "default": [{"algorithm": "TokenBucket", "limit": 10, "window": "1m"}],
  "apis": {
    "GET /new":  [{"algorithm": "FixedWindow", "limit": 5, "window": "1m", "shadow": true}],
    "GET /slow": [{"algorithm": "SlidingLog", "limit": 7, "window": "1m"}],
    "GET /two":  [{"algorithm": "GCRA", "limit": 6, "window": "1m"},
                  {"algorithm": "SlidingCounter", "limit": 4, "window": "1s"}]
  },
  "users": {"probe": [{"algorithm": "Unlimited"}]}
}`

// scrapeCounts GETs a /metrics page from h and returns "decisions rule
// outcome" and "requests rule outcome" -> value, "fallbacks backend
// reason" and "keys limiter" of the rest, with the metric and label names
// of hotlimitprom, or of OpenTelemetry's Prometheus exporter when otel is
// set.
func scrapeCounts(t *testing.T, h http.Handler, otel bool) map[string]float64 {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	label, keys := func(name string) string { return name }, "hotlimit_keys"
	if otel {
		label = func(name string) string {
			if name == "reason" {
				return "hotlimit_fallback_reason"
			}
			return "hotlimit_" + name
		}
		keys = "hotlimit_key_count"
	}
	out := map[string]float64{}
	for name, f := range families {
		for _, s := range f.GetMetric() {
			l := map[string]string{}
			for _, p := range s.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			switch name {
			case "hotlimit_decisions_total":
				out["decisions "+l[label("rule")]+" "+l[label("outcome")]] = s.GetCounter().GetValue()
			case "hotlimit_requests_total":
				out["requests "+l[label("rule")]+" "+l[label("outcome")]] = s.GetCounter().GetValue()
			case "hotlimit_fallbacks_total":
				out["fallbacks "+l[label("backend")]+" "+l[label("reason")]] = s.GetCounter().GetValue()
			case keys:
				out["keys "+l[label("limiter")]] = s.GetGauge().GetValue()
			}
		}
	}
	return out
}

// otelCounts returns what a collection of reader holds, keyed as
// promCounts keys hotlimitprom's.
func otelCounts(t *testing.T, reader *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			data, ok := m.Data.(metricdata.Sum[int64])
			require.True(t, ok, "%s is a sum", m.Name)
			for _, p := range data.DataPoints {
				get := func(k string) string { v, _ := p.Attributes.Value(attribute.Key(k)); return v.AsString() }
				switch m.Name {
				case "hotlimit.decisions":
					out["decisions "+get("hotlimit.rule")+" "+get("hotlimit.outcome")] += float64(p.Value)
				case "hotlimit.requests":
					out["requests "+get("hotlimit.rule")+" "+get("hotlimit.outcome")] += float64(p.Value)
				case "hotlimit.fallbacks":
					out["fallbacks "+get("hotlimit.backend")+" "+get("hotlimit.fallback.reason")] += float64(p.Value)
				case "hotlimit.key.count":
					out["keys "+get("hotlimit.limiter")] += float64(p.Value)
				}
			}
		}
	}
	return out
}

// both returns the observer that hands every event and fallback to
// hotlimitprom's and hotlimitotel's Metrics (and every backend built on), as the README wires them
// (hotlimit.Observers), those Metrics, a /metrics handler of each (the
// second through OpenTelemetry's Prometheus exporter) and a manual reader
// of hotlimitotel's.
func both(t *testing.T) (hotlimit.BackendObserver, *hotlimitprom.Metrics, http.Handler, *hotlimitotel.Metrics, http.Handler, *sdkmetric.ManualReader) {
	t.Helper()
	pm := hotlimitprom.New()
	preg := prometheus.NewPedanticRegistry()
	require.NoError(t, preg.Register(pm))
	oreg := prometheus.NewPedanticRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(oreg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	om, err := hotlimitotel.New(provider.Meter("hotlimit"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = om.Close() })
	opts := promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}
	obs, ok := hotlimit.Observers(pm, om).(hotlimit.BackendObserver)
	require.True(t, ok, "Observers of two BackendObservers hears of fallbacks and backends")
	return obs, pm, promhttp.HandlerFor(preg, opts), om, promhttp.HandlerFor(oreg, opts), reader
}

// sequential counts events as the two modules document they do, one after
// another: the sequential model their exports must equal.
type sequential struct {
	mu     sync.Mutex
	counts map[string]float64
	rules  map[string]bool // seen
}

func (m *sequential) Observe(e hotlimit.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rule, outcome := strings.ToValidUTF8(e.RuleName(), "\uFFFD"), e.Outcome.String()
	if !m.rules[rule] { // a rule's four outcomes from its first decision
		m.rules[rule] = true
		for o := hotlimit.OutcomeAllowed; o <= hotlimit.OutcomeShadowDenied; o++ {
			m.counts["decisions "+rule+" "+o.String()] += 0
			m.counts["requests "+rule+" "+o.String()] += 0
		}
	}
	m.counts["decisions "+rule+" "+outcome]++
	m.counts["requests "+rule+" "+outcome] += float64(max(e.N, 0))
}

// ObserveBackend counts a backend's fallbacks at 0 under each reason.
func (m *sequential) ObserveBackend(backend string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range hotlimit.FallbackReasons() {
		m.counts["fallbacks "+strings.ToValidUTF8(backend, "\uFFFD")+" "+r] += 0
	}
}

// ObserveFallback counts f under its backend and reason.
func (m *sequential) ObserveFallback(f hotlimit.Fallback) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.counts["fallbacks "+strings.ToValidUTF8(f.Backend, "\uFFFD")+" "+strings.ToValidUTF8(f.Reason, "\uFFFD")]++
}

// TestBothModulesReportTheSameFactsAsASequentialModel: a service reporting
// to hotlimitprom and hotlimitotel at once decides from many goroutines
// under a frozen clock, on single-limit rules (whose outcomes do not
// depend on the interleaving), a rule of two limits, TakeEach and
// TakeWith; then
// events no service makes (outcomes that name none, n of 0, negative and
// math.MaxInt, no Source, names not valid UTF-8), backends built on and
// fallbacks, all through hotlimit.Observers. A scrape of
// hotlimitprom's /metrics, a collection of hotlimitotel, a scrape of it
// through OpenTelemetry's Prometheus exporter, and the same calls made one
// after another into a service counted by a plain model all hold the same
// series with the same values.
func TestBothModulesReportTheSameFactsAsASequentialModel(t *testing.T) {
	rules, err := service.LoadRules(strings.NewReader(differentialRules))
	require.NoError(t, err)
	obs, pm, promPage, om, otelPage, reader := both(t)
	var now atomic.Int64 // frozen
	// An ObserverFunc, which the service calls directly on its fastest
	// paths; the sequential service below calls its Observer's method.
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(hotlimit.ObserverFunc(obs.Observe)))
	require.NoError(t, err)
	seq := &sequential{counts: map[string]float64{}, rules: map[string]bool{}}
	var seqNow atomic.Int64
	seqSvc, err := service.NewFromRules(rules, hotlimit.WithClock(seqNow.Load), hotlimit.WithObserver(seq))
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: 1e9}

	// call makes the i-th call of a goroutine on s; the calls on a key of
	// a single-limit rule are all of one request.
	call := func(s *service.Service, i int) {
		switch i % 6 {
		case 0:
			if i%12 == 0 {
				s.Allow("u", "GET /")
			} else {
				_, _, _ = s.TakeEach(context.Background(), "u", "GET /", 1, nil)
			}
		case 1:
			s.Take("u", "GET /new", 1)
		case 2:
			s.Allow("u", "GET /slow")
		case 3:
			s.Take("probe", "GET /", 3)
		case 4:
			_, _ = s.TakeWith("v", "GET /", plan, 1)
		case 5:
			if i%12 == 5 {
				s.Take("u", "GET /two", 1)
			} else {
				_, _, _ = s.TakeEach(context.Background(), "u", "GET /two", 1, nil)
			}
		}
	}
	goroutines, each := 8, 300
	if testing.Short() {
		each = 60
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				call(svc, g+i)
			}
		})
	}
	for g := range goroutines {
		for i := range each {
			call(seqSvc, g+i)
		}
	}
	wg.Wait()

	odd := []hotlimit.Event{
		{Source: &hotlimit.Source{Rule: "odd"}, Outcome: 0, N: 2},
		{Source: &hotlimit.Source{Rule: "odd"}, Outcome: 9, N: 0},
		{Source: &hotlimit.Source{Rule: "odd"}, Outcome: hotlimit.OutcomeDenied, N: -3},
		{Source: &hotlimit.Source{Rule: "odd"}, Outcome: hotlimit.OutcomeDenied, N: math.MaxInt},
		{Source: &hotlimit.Source{Rule: "odd"}, Outcome: hotlimit.OutcomeDenied, N: 5},
		{Outcome: hotlimit.OutcomeAllowed, N: 1},
		{Source: &hotlimit.Source{Rule: "bad\xff"}, Outcome: hotlimit.OutcomeNearLimit, N: 1},
		{Source: &hotlimit.Source{Rule: "bad\xfe"}, Outcome: hotlimit.OutcomeNearLimit, N: 1},
		{Source: &hotlimit.Source{Rule: "line\nbreak \"quoted\""}, Outcome: hotlimit.OutcomeShadowDenied, N: 4},
	}
	for _, e := range odd {
		obs.Observe(e)
		seq.Observe(e)
	}
	want := seq.counts
	if math.MaxInt == math.MaxInt64 {
		want["requests odd denied"] = math.MaxInt64 // stops there
	}
	// A backend built on, before any fallback and again after some, as
	// redislimit.New tells of it: its reasons at 0 until they happen. A
	// reason outside the set, of a backend no limiter told of, counts once
	// it happens.
	fallbacks := []hotlimit.Fallback{
		{Backend: "redis", Reason: "timeout"}, {Backend: "redis", Reason: "timeout"}, {Backend: "redis", Reason: "timeout"},
		{Backend: "redis", Reason: "breaker_open"},
		// Two backends whose names read alike once made valid UTF-8: one
		// series, hotlimitprom's by its label, hotlimitotel's by the SDK.
		{Backend: "bad\xff", Reason: "error"}, {Backend: "bad\xfe", Reason: "error"},
		{Backend: "other", Reason: "odd"},
	}
	for _, b := range []string{"redis", "bad\xfe"} {
		obs.ObserveBackend(b)
		seq.ObserveBackend(b)
	}
	for _, f := range fallbacks {
		obs.ObserveFallback(f)
		seq.ObserveFallback(f)
	}
	for _, b := range []string{"redis", "bad\xff"} {
		obs.ObserveBackend(b)
		seq.ObserveBackend(b)
	}
	assert.Equal(t, 3.0, want["fallbacks redis timeout"])
	assert.Equal(t, 2.0, want["fallbacks bad\uFFFD error"])
	assert.Zero(t, want["fallbacks redis canceled"])
	pm.WatchKeys("api", svc.Len)
	om.WatchKeys("api", svc.Len)
	want["keys api"] = float64(svc.Len())

	// The rule of two limits decides by interleaving; its counts are
	// the two modules' alike, and add up to its calls.
	gotProm, gotOtel := scrapeCounts(t, promPage, false), otelCounts(t, reader)
	assert.Equal(t, gotProm, gotOtel, "hotlimitprom's /metrics and hotlimitotel's collection")
	assert.Equal(t, gotProm, scrapeCounts(t, otelPage, true), "hotlimitprom's /metrics and hotlimitotel's through the exporter")
	two := func(counts map[string]float64) (sum float64) {
		for k, v := range counts {
			if strings.HasPrefix(k, `decisions apis["GET /two"] `) {
				sum += v
				delete(counts, k)
				delete(counts, "requests"+strings.TrimPrefix(k, "decisions"))
			}
		}
		return sum
	}
	calls := float64(goroutines * each / 6)
	assert.Equal(t, calls, two(gotProm), "the rule of two limits decided every call")
	two(gotOtel)
	assert.Equal(t, calls, two(want))
	assert.Equal(t, want, gotProm, "hotlimitprom and the model")
	assert.Equal(t, want, gotOtel, "hotlimitotel and the model")
}

// TestScrapesDuringDecisionsAndReloadsNeverGoDown: while goroutines decide
// and the rules are reloaded (a rule removed, one changed, then put back),
// scrapes of hotlimitprom's /metrics and of hotlimitotel's through the
// Prometheus exporter, and collections of its manual reader, never read a
// series lower than the one before, nor lose a series once it was read.
func TestScrapesDuringDecisionsAndReloadsNeverGoDown(t *testing.T) {
	rules, err := service.LoadRules(strings.NewReader(differentialRules))
	require.NoError(t, err)
	obs, _, promPage, _, otelPage, reader := both(t)
	var now atomic.Int64
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(obs))
	require.NoError(t, err)
	changed := rules
	changed.APIs = map[string]service.Limits{"GET /slow": {{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: 1e9}}}

	var done atomic.Bool
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Go(func() {
			for i := 0; !done.Load(); i++ {
				for _, api := range []string{"GET /", "GET /new", "GET /slow", "GET /two"} {
					svc.Take("u", api, 1+(g+i)%3)
				}
				if i%50 == 0 {
					now.Add(int64(time.Second))
				}
			}
		})
	}
	reads := []func() map[string]float64{
		func() map[string]float64 { return scrapeCounts(t, promPage, false) },
		func() map[string]float64 { return scrapeCounts(t, otelPage, true) },
		func() map[string]float64 { return otelCounts(t, reader) },
	}
	last := make([]map[string]float64, len(reads))
	scrapes := 9
	if testing.Short() {
		scrapes = 3
	}
	for i := range scrapes {
		switch i {
		case scrapes / 3:
			require.NoError(t, svc.Replace(changed))
		case 2 * scrapes / 3:
			require.NoError(t, svc.Replace(rules))
		}
		for r, read := range reads {
			got := read()
			for k, v := range last[r] {
				if strings.HasPrefix(k, "keys ") {
					continue // a gauge
				}
				require.Contains(t, got, k, "read %d of source %d", i, r)
				require.GreaterOrEqual(t, got[k], v, "%s, read %d of source %d", k, i, r)
			}
			last[r] = got
		}
	}
	done.Store(true)
	wg.Wait()
	assert.NotZero(t, last[0][`decisions apis["GET /slow"] denied`], "the decisions ran during the scrapes")
}

// TestBothModulesInOneRegistry: hotlimitprom and hotlimitotel read through
// OpenTelemetry's Prometheus exporter export the same metric names with
// other label names, which one registry cannot gather together, as the
// README says; hotlimitprom under another namespace can.
func TestBothModulesInOneRegistry(t *testing.T) {
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "r"}, Outcome: hotlimit.OutcomeDenied, N: 1}
	for _, ns := range []string{"hotlimit", "hotlimitprom"} {
		reg := prometheus.NewRegistry()
		pm := hotlimitprom.New(hotlimitprom.WithNamespace(ns))
		require.NoError(t, reg.Register(pm))
		exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
		require.NoError(t, err)
		provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
		om, err := hotlimitotel.New(provider.Meter("hotlimit"))
		require.NoError(t, err)
		pm.Observe(e)
		om.Observe(e)
		_, err = reg.Gather()
		if ns == "hotlimit" {
			require.ErrorContains(t, err, "hotlimit_decisions_total")
		} else {
			require.NoError(t, err)
		}
		require.NoError(t, om.Close())
		require.NoError(t, provider.Shutdown(context.Background()))
	}
}
