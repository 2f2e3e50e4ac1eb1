package envoyrls

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetrics counts hits per rule under the reference's stat names and
// labels: total, within, near (past 80% of the limit), over, and shadow
// mode, which also counts as over; labels name rules, never descriptor
// values.
func TestMetrics(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	for i := range 22 { // hits: 10/hour
		h.call(t, "conf", 0, desc("hits", "v"+string(rune('a'+i%2))))
	}
	h.call(t, "conf", 3, desc("shadow", "s")) // 3 > 1: over, in shadow
	h.call(t, "conf", 0, desc("shadow", "s"))
	h.call(t, "conf", 0, desc("unlimited", "u"), desc("no_such_key", "x"))

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	want := `
# HELP ratelimit_service_rate_limit_near_limit Hits past 80% of the limit (of the burst, for a rule with one), by rule.
# TYPE ratelimit_service_rate_limit_near_limit counter
ratelimit_service_rate_limit_near_limit{domain="conf",key="conf.hits",key1="hits",key2=""} 4
ratelimit_service_rate_limit_near_limit{domain="conf",key="conf.shadow",key1="shadow",key2=""} 2
# HELP ratelimit_service_rate_limit_over_limit Hits over the limit, shadow mode included, by rule.
# TYPE ratelimit_service_rate_limit_over_limit counter
ratelimit_service_rate_limit_over_limit{domain="conf",key="conf.hits",key1="hits",key2=""} 2
ratelimit_service_rate_limit_over_limit{domain="conf",key="conf.shadow",key1="shadow",key2=""} 2
# HELP ratelimit_service_rate_limit_shadow_mode Hits over a limit in shadow mode, answered OK, by rule.
# TYPE ratelimit_service_rate_limit_shadow_mode counter
ratelimit_service_rate_limit_shadow_mode{domain="conf",key="conf.hits",key1="hits",key2=""} 0
ratelimit_service_rate_limit_shadow_mode{domain="conf",key="conf.shadow",key1="shadow",key2=""} 2
# HELP ratelimit_service_rate_limit_total_hits Hits asked for, by rule.
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="conf",key="conf.hits",key1="hits",key2=""} 22
ratelimit_service_rate_limit_total_hits{domain="conf",key="conf.shadow",key1="shadow",key2=""} 4
# HELP ratelimit_service_rate_limit_within_limit Hits that passed, by rule.
# TYPE ratelimit_service_rate_limit_within_limit counter
ratelimit_service_rate_limit_within_limit{domain="conf",key="conf.hits",key1="hits",key2=""} 20
ratelimit_service_rate_limit_within_limit{domain="conf",key="conf.shadow",key1="shadow",key2=""} 1
`
	// 22 hits over two values of a 10/hour rule: each value passes 10,
	// of which the 9th and 10th are past floor(0.8·10) = 8, so near, and
	// is over once. The shadow rule (1/hour, threshold floor(0.8) = 0):
	// 3 hits from 0 are 2 over the limit and 1 near it; the next hit
	// passes (the 3 took nothing) from 0, past the threshold: near.
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want),
		"ratelimit_service_rate_limit_total_hits", "ratelimit_service_rate_limit_over_limit",
		"ratelimit_service_rate_limit_near_limit", "ratelimit_service_rate_limit_within_limit",
		"ratelimit_service_rate_limit_shadow_mode"))
}

// TestMetricsConfigLoads: ConfigLoaded counts the configurations put in
// force and those rejected, each exported under the reference's name, as
// /metrics shows them.
func TestMetricsConfigLoads(t *testing.T) {
	m := NewMetrics()
	m.ConfigLoaded(true)
	m.ConfigLoaded(true)
	m.ConfigLoaded(false)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ratelimit_service_config_load_error Configurations rejected.
# TYPE ratelimit_service_config_load_error counter
ratelimit_service_config_load_error 1
# HELP ratelimit_service_config_load_success Configurations put in force.
# TYPE ratelimit_service_config_load_success counter
ratelimit_service_config_load_success 2
`), "ratelimit_service_config_load_success", "ratelimit_service_config_load_error"))
}

// TestMetricsOfAnEventWithoutASource: an Event that names no Source, as an
// Observer may be handed from elsewhere, counts under the key "", never a
// panic.
func TestMetricsOfAnEventWithoutASource(t *testing.T) {
	m := NewMetrics()
	require.NotPanics(t, func() { m.Observe(hotlimit.Event{Outcome: hotlimit.OutcomeDenied, N: 2}) })
	c, ok := m.rules.Load("")
	require.True(t, ok)
	assert.EqualValues(t, 2, c.over.Load())
	assert.EqualValues(t, 2, c.total.Load())
}

// TestMetricsCountEveryDecisionConcurrently: under concurrent requests on
// one descriptor value of a 10/hour rule, with the clock frozen, the
// counters equal the decisions: 10 hits within the limit, every other hit
// over, and within + over = total.
func TestMetricsCountEveryDecisionConcurrently(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	goroutines, each := 8, 25
	if testing.Short() {
		each = 5
	}
	var wg sync.WaitGroup
	var passed atomic.Int64
	for range goroutines {
		wg.Go(func() {
			for range each {
				if h.call(t, "conf", 0, desc("hits", "hammer")).OverallCode == ok {
					passed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	c, found := m.rules.Load("conf.hits")
	require.True(t, found)
	total := uint64(goroutines * each)
	assert.EqualValues(t, 10, passed.Load(), "exactly the limit passed")
	assert.Equal(t, total, c.total.Load())
	assert.EqualValues(t, 10, c.within.Load())
	assert.Equal(t, total-10, c.over.Load())
	assert.EqualValues(t, 2, c.near.Load(), "the 9th and 10th hits are past floor(0.8·10) = 8")
}

// TestMetricsCountFallbacksByReason: fallbacks are counted per backend and
// reason, as hotlimitprom names them, also under concurrent reports.
func TestMetricsCountFallbacksByReason(t *testing.T) {
	m := NewMetrics()
	reasons := []string{"timeout", "error", "breaker_open"}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for range 100 {
				m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: reasons[g%len(reasons)]})
			}
		})
	}
	wg.Wait()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_fallbacks_total Decisions a backend could not make, made by its failure policy, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{backend="redis",reason="breaker_open"} 200
hotlimit_fallbacks_total{backend="redis",reason="error"} 200
hotlimit_fallbacks_total{backend="redis",reason="timeout"} 200
`), "hotlimit_fallbacks_total"))
}

// TestMetricsDoNotCountRefunds: negative hits give back, they are not hits
// asked for: they count in no counter, on a blocking rule (limit 0) as on
// any other.
func TestMetricsDoNotCountRefunds(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	for _, key := range []string{"blocked", "refund"} {
		neg := desc(key, "r")
		neg.IsNegativeHits = true
		assert.Equal(t, ok, h.call(t, "conf", 4, neg).OverallCode, key)
	}
	h.call(t, "conf", 1, desc("blocked", "b")) // one hit, over
	c, found := m.rules.Load("conf.blocked")
	require.True(t, found)
	assert.EqualValues(t, 1, c.total.Load(), "the hit, not the refund")
	assert.EqualValues(t, 1, c.over.Load())
	assert.Zero(t, c.within.Load(), "a refund passes no hit")
	assert.Zero(t, c.near.Load())
	if c, found := m.rules.Load("conf.refund"); found {
		assert.Zero(t, c.total.Load())
	}
}

// TestKeysGauge: Server.Len counts the keys of the rules' limiters and of the
// override limiters, and Metrics exports it as hotlimit_keys under the name
// given to WatchKeys, read at each scrape; a nil function removes it.
func TestKeysGauge(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t)
	m.WatchKeys("rls", h.srv.Len)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	gauge := func(want string) {
		t.Helper()
		assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_keys Keys held, by limiter.
# TYPE hotlimit_keys gauge
`+want), "hotlimit_keys"))
	}
	gauge("hotlimit_keys{limiter=\"rls\"} 0\n")
	h.call(t, "conf", 0, desc("hits", "a"))
	h.call(t, "conf", 0, desc("hits", "b"))
	assert.Equal(t, 2, h.srv.Len(), "a key per descriptor value")
	over := desc("hits", "c")
	over.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_MINUTE}
	h.call(t, "conf", 0, over)
	assert.Equal(t, 3, h.srv.Len(), "and one in the override's limiter")
	gauge("hotlimit_keys{limiter=\"rls\"} 3\n")
	m.WatchKeys("rls", nil)
	gauge("")
}

// TestNearLimitIsAShareOfTheBurst: a rule of 5 per second with a burst of 3
// has at most 2 left after a hit, so only its last hit (0 left, at most 20%
// of 3) is near the limit, where 20% of the limit would make 1 left near too.
func TestNearLimitIsAShareOfTheBurst(t *testing.T) {
	m := NewMetrics()
	h := inProcess(t, WithObserver(m))
	for range 4 { // passes 3, leaving 2, 1, 0; then over
		h.call(t, "algos", 0, desc("alg", "GCRABurst"))
	}
	c, ok := m.rules.Load("algos.alg_GCRABurst")
	if !ok {
		keys := []string{}
		m.rules.Range(func(k string, _ *ruleCounters) bool { keys = append(keys, k); return true })
		require.Failf(t, "no counters for the rule", "have %v", keys)
	}
	assert.EqualValues(t, 3, c.within.Load(), "within")
	assert.EqualValues(t, 1, c.near.Load(), "near: the hit that left 0")
	assert.EqualValues(t, 1, c.over.Load(), "over")
}

// TestMetricsLabelsNotUTF8: a configuration whose descriptor values are
// not UTF-8 (YAML's !!binary), which the reference accepts, loads, its
// requests are decided, and /metrics still serves every series: the labels
// of those rules carry U+FFFD where their keys' bytes are not UTF-8, and
// two rules whose keys then read the same count in one series.
func TestMetricsLabelsNotUTF8(t *testing.T) {
	d, err := ParseDomain("bin.yaml", []byte(`
domain: bin
descriptors:
  - key: k
    value: !!binary 6Q==
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: k
    value: !!binary 6g==
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: plain
    rate_limit: {unit: hour, requests_per_unit: 5}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	m := NewMetrics()
	s, err := New(cfg, WithObserver(m), WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	for _, v := range []string{"\xe9", "\xea", "\xea"} {
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "bin", Descriptors: []*rlext.RateLimitDescriptor{desc("k", v)}})
		require.NoError(t, err)
		require.NotNil(t, resp.Statuses[0].CurrentLimit, "value %q matches its rule", v)
		assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	}
	_, err = s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "bin", Descriptors: []*rlext.RateLimitDescriptor{desc("plain", "p")}})
	require.NoError(t, err)

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	want := `
# HELP ratelimit_service_rate_limit_total_hits Hits asked for, by rule.
# TYPE ratelimit_service_rate_limit_total_hits counter
ratelimit_service_rate_limit_total_hits{domain="bin",key="bin.k_\uFFFD",key1="k_\uFFFD",key2=""} 3
ratelimit_service_rate_limit_total_hits{domain="bin",key="bin.plain",key1="plain",key2=""} 1
`
	want = strings.ReplaceAll(want, `\uFFFD`, "\uFFFD")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_service_rate_limit_total_hits"))

	// The other labels of text given to Metrics, too.
	m.ObserveFallback(hotlimit.Fallback{Backend: "b\xff", Reason: "error"})
	m.WatchKeys("n\xff", func() int { return 7 })
	want = strings.ReplaceAll(`
# HELP hotlimit_fallbacks_total Decisions a backend could not make, made by its failure policy, by backend and reason.
# TYPE hotlimit_fallbacks_total counter
hotlimit_fallbacks_total{backend="b\uFFFD",reason="error"} 1
# HELP hotlimit_keys Keys held, by limiter.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="n\uFFFD"} 7
`, `\uFFFD`, "\uFFFD")
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "hotlimit_fallbacks_total", "hotlimit_keys"))

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode, "a scrape of /metrics")
}

// TestMetricsMergedSeriesNeverGoesDown: two rules whose keys read the same
// as labels (values given as !!binary) count in one series; a reload that
// removes one of them keeps the other, and with it the series, which goes
// on from its total, where it fell by the removed rule's counts, a counter
// reset to Prometheus (rate() and increase() read a spike of hits).
func TestMetricsMergedSeriesNeverGoesDown(t *testing.T) {
	config := func(values ...string) *Config {
		y := "domain: bin\ndescriptors:\n"
		for _, v := range values {
			y += "  - key: k\n    value: !!binary " + v + "\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"
		}
		d, err := ParseDomain("bin.yaml", []byte(y))
		require.NoError(t, err)
		cfg, err := NewConfig(d)
		require.NoError(t, err)
		return cfg
	}
	m := NewMetrics()
	s, err := New(config("6Q==", "6g=="), WithObserver(m), WithLogger(slog.New(slog.DiscardHandler))) // "\xe9", "\xea"
	require.NoError(t, err)
	hit := func(v string) {
		t.Helper()
		resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "bin", Descriptors: []*rlext.RateLimitDescriptor{desc("k", v)}})
		require.NoError(t, err)
		require.NotNil(t, resp.Statuses[0].CurrentLimit, "value %q matches its rule", v)
	}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(m))
	total := func() string {
		t.Helper()
		mfs, err := reg.Gather()
		require.NoError(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "ratelimit_service_rate_limit_total_hits" {
				var out []string
				for _, s := range mf.Metric {
					out = append(out, s.GetLabel()[1].GetValue()+"="+strconv.FormatFloat(s.GetCounter().GetValue(), 'f', -1, 64))
				}
				return strings.Join(out, " ")
			}
		}
		return ""
	}
	hit("\xe9")
	hit("\xea")
	hit("\xea")
	require.Equal(t, "bin.k_\uFFFD=3", total())

	require.NoError(t, s.Reload(config("6g==")))
	assert.Equal(t, "bin.k_\uFFFD=3", total(), "the series lives on, from where it was")
	hit("\xea")
	assert.Equal(t, "bin.k_\uFFFD=4", total())

	require.NoError(t, s.Reload(config("6g==", "6Q==")))
	hit("\xe9")
	assert.Equal(t, "bin.k_\uFFFD=5", total(), "a rule back counts on in the live series")

	require.NoError(t, s.Reload(config("7A==")))
	assert.Equal(t, "bin.k_\uFFFD=5", total(), "another rule of the same labels keeps the series")
	require.NoError(t, s.Reload(config()))
	assert.Empty(t, total(), "no rule of those labels: the series leaves /metrics")
	require.NoError(t, s.Reload(config("6Q==")))
	hit("\xe9")
	assert.Equal(t, "bin.k_\uFFFD=1", total(), "a series back starts from zero")
}
