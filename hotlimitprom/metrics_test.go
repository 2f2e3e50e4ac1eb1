package hotlimitprom_test

import (
	"io"
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
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// observe takes n from lim for key and reports the decision to m as a
// service would, under rule.
func observe(m *hotlimitprom.Metrics, lim hotlimit.Limiter, rule, key string, n int) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	d := lim.Take(key, n)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rule, Policy: c}, Outcome: hotlimit.Classify(d, false, hotlimit.DefaultNearLimit), N: n, Decision: d})
}

func TestMetricsAfterAKnownSequence(t *testing.T) {
	var now atomic.Int64
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))

	// Limit 5, near limit at Remaining <= 1: 3 allowed, 1 near (Remaining 1),
	// 1 near (Remaining 0), then 2 denied; another rule takes 2 at once.
	for range 7 {
		observe(m, lim, "default", "a", 1)
	}
	observe(m, lim, `apis["GET /pay"]`, "b", 2)
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "breaker_open"})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "breaker_open"})
	keys := 2
	m.WatchKeys("api", func() int { return keys })

	want := `
# HELP hotlimit_decisions_total Rate-limit decisions, by the rule that decided and outcome.
# TYPE hotlimit_decisions_total counter
hotlimit_decisions_total{outcome="allowed",rule="apis[\"GET /pay\"]"} 1
hotlimit_decisions_total{outcome="allowed",rule="default"} 3
hotlimit_decisions_total{outcome="denied",rule="apis[\"GET /pay\"]"} 0
hotlimit_decisions_total{outcome="denied",rule="default"} 2
hotlimit_decisions_total{outcome="near_limit",rule="apis[\"GET /pay\"]"} 0
hotlimit_decisions_total{outcome="near_limit",rule="default"} 2
hotlimit_decisions_total{outcome="shadow_denied",rule="apis[\"GET /pay\"]"} 0
hotlimit_decisions_total{outcome="shadow_denied",rule="default"} 0
# HELP hotlimit_fallbacks_total Decisions a backend could not make, made by its failure policy, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{backend="redis",reason="breaker_open"} 2
hotlimit_fallbacks_total{backend="redis",reason="timeout"} 1
# HELP hotlimit_keys Keys held by a limiter or service.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="api"} 2
`
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"hotlimit_decisions_total", "hotlimit_fallbacks_total", "hotlimit_keys"))
	assert.Equal(t, 2.0, testutil.ToFloat64(requests(t, reg, `apis["GET /pay"]`, "allowed")), "a Take of 2 counts 2 requests")

	keys = 7
	m.WatchKeys("other", func() int { return 1 })
	m.WatchKeys("other", nil)
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_keys Keys held by a limiter or service.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="api"} 7
`), "hotlimit_keys"))
}

// requests returns the hotlimit_requests_total series of rule and outcome.
func requests(t *testing.T, reg *prometheus.Registry, rule, outcome string) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "hotlimit_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["rule"] == rule && labels["outcome"] == outcome {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	t.Fatalf("no hotlimit_requests_total{rule=%q,outcome=%q}", rule, outcome)
	return nil
}

func TestObserveCountsEveryDecisionConcurrently(t *testing.T) {
	m := hotlimitprom.New(hotlimitprom.WithNamespace("x"), hotlimitprom.WithConstLabels(prometheus.Labels{"app": "t"}))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	const goroutines, each = 8, 2000
	rules := []string{"default", "users[\"a\"]", "apis[\"b\"]"}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rules[(g+i)%len(rules)]}, Outcome: hotlimit.OutcomeDenied, N: 1})
			}
		})
	}
	wg.Wait()
	n, err := testutil.GatherAndCount(reg, "x_decisions_total")
	require.NoError(t, err)
	assert.Equal(t, len(rules)*4, n, "one series per rule and outcome")
	total := 0.0
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "x_decisions_total" {
			for _, s := range f.GetMetric() {
				total += s.GetCounter().GetValue()
				assert.Contains(t, s.String(), `value:"t"`, "const label")
			}
		}
	}
	assert.Equal(t, float64(goroutines*each), total, "every decision counted once")
}

func TestObserveDoesNotAllocate(t *testing.T) {
	m := hotlimitprom.New()
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1}
	m.Observe(e)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { m.Observe(e) }))
	bad := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: 77, N: 1} // counted as unknown, never a panic
	assert.NotPanics(t, func() { m.Observe(bad) })
}

// TestObserveFallbackDoesNotAllocate: while a backend is down every
// decision falls back, so ObserveFallback is a hot path too: it allocates
// nothing once its (backend, reason) has been seen, as the README says.
func TestObserveFallbackDoesNotAllocate(t *testing.T) {
	m := hotlimitprom.New()
	f := hotlimit.Fallback{Backend: "redis", Reason: "timeout"}
	m.ObserveFallback(f)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { m.ObserveFallback(f) }))
}

// TestScrapeShowsOnlyTheDocumentedOutcomes: a scrape over HTTP shows, for a
// rule that decided, the four documented outcomes and no "unknown" series;
// a decision whose Outcome names none is still counted, as "unknown".
func TestScrapeShowsOnlyTheDocumentedOutcomes(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	scrape := func() string {
		res, err := http.Get(srv.URL)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return string(body)
	}
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1})
	body := scrape()
	for _, metric := range []string{"hotlimit_decisions_total", "hotlimit_requests_total"} {
		for _, outcome := range []string{"allowed", "near_limit", "denied", "shadow_denied"} {
			assert.Contains(t, body, metric+`{outcome="`+outcome+`",rule="default"}`)
		}
	}
	assert.NotContains(t, body, `outcome="unknown"`)

	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: 0, N: 3})
	body = scrape()
	assert.Contains(t, body, `hotlimit_decisions_total{outcome="unknown",rule="default"} 1`)
	assert.Contains(t, body, `hotlimit_requests_total{outcome="unknown",rule="default"} 3`)
}

// TestEventWithoutASource: an Event that names no Source is counted under
// the rule "", never a panic.
func TestEventWithoutASource(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	assert.NotPanics(t, func() { m.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied, N: 2}) })
	assert.Equal(t, 2.0, testutil.ToFloat64(requests(t, reg, "", "denied")))
}

func BenchmarkObserve(b *testing.B) {
	m := hotlimitprom.New()
	e := hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeAllowed, N: 1}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Observe(e)
		}
	})
}

// TestScrapeEqualsTheServicesDecisionsConcurrently: a service reporting to
// the metrics decides from many goroutines, with the clock frozen, on a
// rule of 10 per minute and a rule of 4 per minute in shadow mode; a scrape
// then holds exactly the decisions the callers got, by rule and outcome.
func TestScrapeEqualsTheServicesDecisionsConcurrently(t *testing.T) {
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "TokenBucket", "limit": 10, "window": "1m"}],
	  "apis":    {"new": [{"algorithm": "FixedWindow", "limit": 4, "window": "1m", "shadow": true}]}
	}`))
	require.NoError(t, err)
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	var now atomic.Int64 // frozen
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	require.NoError(t, err)

	goroutines, each := 8, 200
	if testing.Short() {
		each = 20
	}
	var passedOld, passedNew atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				if (g+i)%2 == 0 {
					if svc.Allow("u", "old") {
						passedOld.Add(1)
					}
				} else if svc.Take("u", "new", 1).Allowed {
					passedNew.Add(1)
				}
			}
		})
	}
	wg.Wait()
	half := float64(goroutines * each / 2)
	require.EqualValues(t, 10, passedOld.Load(), "the default passes its limit")
	require.EqualValues(t, half, passedNew.Load(), "a shadow limit denies no one")

	value := func(name, rule, outcome string) float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			for _, s := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range s.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["rule"] == rule && labels["outcome"] == outcome {
					return s.GetCounter().GetValue()
				}
			}
		}
		t.Fatalf("no %s{rule=%q,outcome=%q}", name, rule, outcome)
		return 0
	}
	newRule := `apis["new"]`
	for _, name := range []string{"hotlimit_decisions_total", "hotlimit_requests_total"} {
		// 10 per minute: Remaining 9..3 allowed, 2..0 near the limit.
		assert.Equal(t, 7.0, value(name, "default", "allowed"), name)
		assert.Equal(t, 3.0, value(name, "default", "near_limit"), name)
		assert.Equal(t, half-10, value(name, "default", "denied"), name)
		// 4 per minute: Remaining 3..1 allowed, 0 near the limit.
		assert.Equal(t, 3.0, value(name, newRule, "allowed"), name)
		assert.Equal(t, 1.0, value(name, newRule, "near_limit"), name)
		assert.Equal(t, half-4, value(name, newRule, "shadow_denied"), name)
		assert.Zero(t, value(name, newRule, "denied"), name)
	}
}

// TestRequestsNeverGoDown: decisions on math.MaxInt requests, which the
// service reports as it does any (denied, counted n), would overflow a
// 64-bit count at the second: the requests counted stop at 2^63−1
// instead, and the counter, as a scrape reads it, never goes down.
func TestRequestsNeverGoDown(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	huge := hotlimit.Event{Source: &hotlimit.Source{Rule: "r"}, Outcome: hotlimit.OutcomeDenied, N: math.MaxInt}
	last := 0.0
	for i := range 4 {
		m.Observe(huge)
		m.Observe(hotlimit.Event{Source: huge.Source, Outcome: hotlimit.OutcomeDenied, N: 1})
		v := scraped(t, reg, "hotlimit_requests_total", "r", "denied")
		require.GreaterOrEqual(t, v, last, "after %d huge decisions", i+1)
		last = v
	}
	if math.MaxInt == math.MaxInt64 {
		assert.Equal(t, float64(math.MaxInt64), last, "stops at 2^63−1")
	}
	assert.Equal(t, 8.0, scraped(t, reg, "hotlimit_decisions_total", "r", "denied"), "every decision counted")
}

// scraped returns the value of the series name{rule, outcome} in a gather
// of reg.
func scraped(t *testing.T, reg *prometheus.Registry, name, rule, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["rule"] == rule && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{rule=%q,outcome=%q}", name, rule, outcome)
	return 0
}

// TestRequestsNeverGoDownConcurrently: decisions on huge and on single
// requests from several goroutines, read by scrapes meanwhile: no scrape
// reads less than the one before, and the count ends at 2^63−1.
func TestRequestsNeverGoDownConcurrently(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	src := &hotlimit.Source{Rule: "r"}
	m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeDenied})
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
	last := 0.0
	for range 50 {
		v := scraped(t, reg, "hotlimit_requests_total", "r", "denied")
		require.GreaterOrEqual(t, v, last)
		last = v
	}
	wg.Wait()
	if math.MaxInt == math.MaxInt64 {
		assert.Equal(t, float64(math.MaxInt64), scraped(t, reg, "hotlimit_requests_total", "r", "denied"))
	}
}

// TestObserveEdgesOfTheOutcomesAndCounts: the first Outcome past the four
// named ones counts as "unknown", like any other that names none, never a
// panic; and a decision on a negative count (a caller's bug, denied)
// counts as a decision on no requests: the denied requests stay where the
// decisions on requests left them.
func TestObserveEdgesOfTheOutcomesAndCounts(t *testing.T) {
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	src := &hotlimit.Source{Rule: "r"}
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeShadowDenied + 1, N: 2})
	})
	assert.Equal(t, 1.0, scraped(t, reg, "hotlimit_decisions_total", "r", "unknown"))
	assert.Equal(t, 2.0, scraped(t, reg, "hotlimit_requests_total", "r", "unknown"))

	m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeDenied, N: 3})
	m.Observe(hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeDenied, N: -2})
	assert.Equal(t, 2.0, scraped(t, reg, "hotlimit_decisions_total", "r", "denied"))
	assert.Equal(t, 3.0, scraped(t, reg, "hotlimit_requests_total", "r", "denied"), "a negative count took requests off")
}
