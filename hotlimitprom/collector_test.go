package hotlimitprom_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
)

// everySeries makes m export a series of each of its metrics.
func everySeries(m *hotlimitprom.Metrics) {
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 2})
	m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
	m.WatchKeys("api", func() int { return 3 })
}

// TestMetricsPassPromlint: the names, types, units and HELP texts of every
// metric pass Prometheus' own lint (counters end in _total, no unit
// misnamed, HELP present).
func TestMetricsPassPromlint(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := hotlimitprom.New()
	require.NoError(t, reg.Register(m))
	everySeries(m)
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, N: 1}) // outcome "unknown"
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 4*2+2+1+1, n, "the fixture exports every metric")
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestTwoMetricsInOneRegistry: Metrics with the same constant label names
// and different values register side by side; one made alike is refused
// as a duplicate, and one with other label names (none, say) is refused
// by an error that says so; an unregistered Metrics can be replaced.
func TestTwoMetricsInOneRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	service := func(name string) hotlimitprom.Option {
		return hotlimitprom.WithConstLabels(prometheus.Labels{"service": name})
	}
	a := hotlimitprom.New(service("checkout"))
	require.NoError(t, reg.Register(a))
	b := hotlimitprom.New(service("search"))
	require.NoError(t, reg.Register(b))

	err := reg.Register(hotlimitprom.New(service("checkout")))
	var dup prometheus.AlreadyRegisteredError
	require.True(t, errors.As(err, &dup), "%v", err)
	assert.Same(t, a, dup.ExistingCollector)
	err = reg.Register(hotlimitprom.New())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "different label names")

	everySeries(a)
	everySeries(b)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)

	require.True(t, reg.Unregister(a))
	c := hotlimitprom.New(service("checkout"))
	require.NoError(t, reg.Register(c))
	n, err := testutil.GatherAndCount(reg, "hotlimit_keys")
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only b's keys: c watches none yet, a is gone")
}

// TestInvalidUTF8LabelValuesDoNotPanic: a rule, backend or limiter name
// that is not valid UTF-8 (which Prometheus refuses as a label value) is
// exported with U+FFFD in place of the bad bytes, rather than panicking in
// Observe, ObserveFallback or a scrape.
func TestInvalidUTF8LabelValuesDoNotPanic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := hotlimitprom.New()
	require.NoError(t, reg.Register(m))
	require.NotPanics(t, func() {
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "bad\xff"}, Outcome: hotlimit.OutcomeDenied, N: 1})
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "bad\xfe"}, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "bad\xff", Reason: "timeout"})
		m.WatchKeys("bad\xff", func() int { return 3 })
	})
	want := strings.ReplaceAll(`
# HELP hotlimit_fallbacks_total Decisions a backend could not make, made by its failure policy, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{backend="bad\uFFFD",reason="timeout"} 1
# HELP hotlimit_keys Keys held by a limiter or service.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="bad\uFFFD"} 3
`, `\uFFFD`, "\uFFFD")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "hotlimit_fallbacks_total", "hotlimit_keys"))
	n, err := testutil.GatherAndCount(reg, "hotlimit_decisions_total")
	require.NoError(t, err)
	assert.Equal(t, 4+1, n, "the four outcomes of bad\uFFFD, and the unknown one")
}

// TestObserveBackendOfAnInvalidUTF8NameDoesNotPanic: a backend named with
// bytes that are not valid UTF-8 has its fallback series, at 0, exported
// under U+FFFD in place of the bad bytes, as its fallbacks are, rather than
// panicking as the limiter on it is built.
func TestObserveBackendOfAnInvalidUTF8NameDoesNotPanic(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := hotlimitprom.New()
	require.NoError(t, reg.Register(m))
	require.NotPanics(t, func() { m.ObserveBackend("bad\xff") })
	m.ObserveFallback(hotlimit.Fallback{Backend: "bad\xff", Reason: "timeout"})
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "hotlimit_fallbacks_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			assert.Equal(t, "bad\uFFFD", labels["backend"])
			got[labels["reason"]] = s.GetCounter().GetValue()
		}
	}
	want := map[string]float64{}
	for _, r := range hotlimit.FallbackReasons() {
		want[r] = 0
	}
	want["timeout"] = 1
	assert.Equal(t, want, got, "one series per reason, the fallback's counted in it")
}

// TestCollectRacesObserveAndWatchKeys: scrapes while decisions, new rules,
// fallbacks and watched functions change neither race nor lose a count. The
// decisions start once the scraper is running, and go on until it has
// finished scrapes begun after them, so that scrapes overlap them however
// the goroutines are scheduled (and the race detector sees them overlap).
func TestCollectRacesObserveAndWatchKeys(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := hotlimitprom.New()
	require.NoError(t, reg.Register(m))
	rounds := 2000
	if testing.Short() {
		rounds = 200
	}
	var scrapes atomic.Int64
	running := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			_, err := reg.Gather()
			assert.NoError(t, err)
			if scrapes.Add(1) == 1 {
				close(running)
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	<-running
	rules := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	from := scrapes.Load()
	// Scrapes finished since from, one of which may have begun before the
	// first decision: two, so that one began and ended among them.
	i := 0
	for ; i < rounds || scrapes.Load()-from < 2; i++ {
		// A new rule every few rounds at first, as the scrapes go on.
		rule := rules[min(i/4, len(rules)-1)]
		m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: rule}, Outcome: hotlimit.OutcomeAllowed, N: 1})
		m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"})
		keys := i
		m.WatchKeys("api", func() int { return keys })
		m.WatchKeys("api", nil)
	}
	close(stop)
	wg.Wait()
	assert.GreaterOrEqual(t, scrapes.Load()-from, int64(2), "scrapes during the decisions")
	var total float64
	for _, r := range rules {
		total += testutil.ToFloat64(requests(t, reg, r, "allowed"))
	}
	assert.EqualValues(t, i, total)
}

// TestCountersCarryTheirCreatedTimestamp: each series of decisions and
// requests carries the time its rule was first seen as its created
// timestamp, as a client_golang counter does, so that a Prometheus that
// ingests created timestamps counts the first decisions into rate().
func TestCountersCarryTheirCreatedTimestamp(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m := hotlimitprom.New()
	require.NoError(t, reg.Register(m))
	before := time.Now()
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, Outcome: hotlimit.OutcomeDenied, N: 2})
	m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "default"}, N: 1}) // outcome "unknown"
	after := time.Now()
	families, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, f := range families {
		if f.GetName() != "hotlimit_decisions_total" && f.GetName() != "hotlimit_requests_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			ct := s.GetCounter().GetCreatedTimestamp()
			require.NotNil(t, ct, "%s %v", f.GetName(), s.GetLabel())
			assert.False(t, ct.AsTime().Before(before.Truncate(time.Millisecond)) || ct.AsTime().After(after), "%v in [%v, %v]", ct.AsTime(), before, after)
			n++
		}
	}
	assert.Equal(t, 2*5, n, "four outcomes and the unknown one, of each metric")
}
