package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// metricsRules is domain m: fixed windows of 10 per hour, a shadow rule of
// 5, a wildcard rule with detailed_metric, a two-level rule with
// value_to_metric, and rules whose keys hold an IPv4 address and a colon.
const metricsRules = `domain: m
descriptors:
  - key: seq
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: cross
    rate_limit: {unit: hour, requests_per_unit: 10}
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: path
    value: "/api/*"
    detailed_metric: true
    rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: tenant
    descriptors:
      - key: user
        value_to_metric: true
        detailed_metric: true
        descriptors:
          - key: op
            rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: remote_address
    value: 10.0.0.1
    rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: "port:80"
    rate_limit: {unit: hour, requests_per_unit: 1000}
  - key: generic
    rate_limit: {unit: hour, requests_per_unit: 1000}
`

// metricsServer is a Server of rules (domain m) in its own directory, with a
// frozen clock, observed by a Metrics registered with a registry.
type metricsServer struct {
	srv *Server
	m   *Metrics
	reg *prometheus.Registry
	dir string
}

func newMetricsServer(t *testing.T, rules string) *metricsServer {
	t.Helper()
	ms := &metricsServer{m: NewMetrics(), reg: prometheus.NewPedanticRegistry(), dir: t.TempDir()}
	ms.write(t, rules)
	cfg, err := LoadDir(ms.dir)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(t0)
	ms.srv, err = New(cfg, WithClock(now.Load), WithLogger(slog.New(slog.DiscardHandler)), WithObserver(ms.m))
	require.NoError(t, err)
	ms.m.WatchKeys("hotlimitd", ms.srv.Len)
	require.NoError(t, ms.reg.Register(ms.m))
	return ms
}

func (ms *metricsServer) write(t *testing.T, rules string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(ms.dir, "m.yaml"), []byte(rules), 0o644))
}

// call asks for hits on one descriptor of domain and returns its code.
func (ms *metricsServer) call(t *testing.T, domain string, hits uint64, d *rlext.RateLimitDescriptor) pb.RateLimitResponse_Code {
	t.Helper()
	d.HitsAddend = wrapperspb.UInt64(hits)
	resp, err := ms.srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlext.RateLimitDescriptor{d}})
	require.NoError(t, err)
	return resp.Statuses[0].Code
}

// counts are a rule's five counters.
type counts struct{ total, within, near, over, shadow uint64 }

// series gathers the per-rule series: counts by key, and each series'
// labels.
func (ms *metricsServer) series(t *testing.T) (map[string]counts, []map[string]string) {
	t.Helper()
	mfs, err := ms.reg.Gather()
	require.NoError(t, err)
	byKey := map[string]counts{}
	var labels []map[string]string
	for _, mf := range mfs {
		stat, ok := strings.CutPrefix(mf.GetName(), "ratelimit_service_rate_limit_")
		if !ok {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range mt.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			c, v := byKey[l["key"]], uint64(mt.GetCounter().GetValue())
			switch stat {
			case "total_hits":
				c.total = v
				labels = append(labels, l)
			case "within_limit":
				c.within = v
			case "near_limit":
				c.near = v
			case "over_limit":
				c.over = v
			case "shadow_mode":
				c.shadow = v
			}
			byKey[l["key"]] = c
		}
	}
	return byKey, labels
}

// keysGauge returns hotlimit_keys.
func (ms *metricsServer) keysGauge(t *testing.T) float64 {
	t.Helper()
	mfs, err := ms.reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == "hotlimit_keys" {
			require.Len(t, mf.GetMetric(), 1)
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	require.Fail(t, "no hotlimit_keys")
	return 0
}

// TestNearThresholdIsTheReferences: floor(float32(capacity)·0.8), the
// count past which the reference counts hits near the limit.
func TestNearThresholdIsTheReferences(t *testing.T) {
	for capacity, want := range map[int64]int64{0: 0, 1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 10: 8, 11: 8, 100: 80, 1001: 800} {
		assert.Equal(t, want, nearThreshold(capacity), "capacity %d", capacity)
	}
}

// TestMetricsCountAsTheReference runs known sequences of requests and
// checks the counters after each against the reference server's
// arithmetic, worked by hand (limit L = 10, near threshold floor(0.8·10) =
// 8; a request takes the count from before to after = before + hits):
//
//   - passed: within += hits; near += hits past 8 (all when before ≥ 8).
//   - over (after > L): over += hits past L, all when before ≥ L; and near
//     += L − max(8, before) when before < L; shadow += what over got.
func TestMetricsCountAsTheReference(t *testing.T) {
	ms := newMetricsServer(t, metricsRules)
	steps := []struct {
		key  string
		hits uint64
		code pb.RateLimitResponse_Code
		want counts // after the step
	}{
		// No request crosses the limit: the reference makes the same
		// decisions and counts the same.
		{"seq", 3, ok, counts{total: 3, within: 3}},                       // 0 → 3
		{"seq", 4, ok, counts{total: 7, within: 7}},                       // 3 → 7
		{"seq", 2, ok, counts{total: 9, within: 9, near: 1}},              // 7 → 9: the 9th hit is past 8
		{"seq", 1, ok, counts{total: 10, within: 10, near: 2}},            // 9 → 10: before ≥ 8, all near
		{"seq", 1, over, counts{total: 11, within: 10, near: 2, over: 1}}, // before 10 ≥ L: all over
		{"seq", 2, over, counts{total: 13, within: 10, near: 2, over: 3}},
		{"seq", 1, over, counts{total: 14, within: 10, near: 2, over: 4}},

		// A request crosses the limit: counted as the reference counts it.
		{"cross", 7, ok, counts{total: 7, within: 7}},                      // 0 → 7, not past 8
		{"cross", 5, over, counts{total: 12, within: 7, near: 2, over: 2}}, // 7 → 12: 2 past L over, 9..10 near
		// The reference spent those 5 (count 12), so it would deny the
		// next 3 (over 3, then over 1: total 16, within 7, near 2, over
		// 6). Here the 5 took nothing: the count is 7, and 3 pass.
		{"cross", 3, ok, counts{total: 15, within: 10, near: 4, over: 2}},   // 7 → 10: 9th and 10th near
		{"cross", 1, over, counts{total: 16, within: 10, near: 4, over: 3}}, // before 10: all over

		// Shadow mode, L = 5, threshold floor(0.8·5) = 4: answered OK.
		{"shadow", 4, ok, counts{total: 4, within: 4}},                              // 0 → 4, not past 4
		{"shadow", 3, ok, counts{total: 7, within: 4, near: 1, over: 2, shadow: 2}}, // 4 → 7: 2 over, the 5th near
	}
	for i, s := range steps {
		assert.Equal(t, s.code, ms.call(t, "m", s.hits, desc(s.key, "v")), "step %d", i)
		got, _ := ms.series(t)
		assert.Equal(t, s.want, got["m."+s.key], "step %d: %s of %d hits", i, s.key, s.hits)
	}
}

// TestMetricsLabelsAreTheReferenceMappings: domain, key1 and key2 are what
// the reference's default Prometheus mapping makes of the same stat name:
// the key sanitised as the reference does (IPv4 dots and ':' made '_'),
// then cut at its dots; levels past the second have no label.
func TestMetricsLabelsAreTheReferenceMappings(t *testing.T) {
	ms := newMetricsServer(t, metricsRules)
	ms.call(t, "m", 1, desc("seq", "v"))
	ms.call(t, "m", 1, desc("tenant", "acme", "user", "bob", "op", "read"))
	ms.call(t, "m", 1, desc("remote_address", "10.0.0.1"))
	ms.call(t, "m", 1, desc("port:80", "x"))
	_, labels := ms.series(t)
	assert.ElementsMatch(t, []map[string]string{
		{"key": "m.seq", "domain": "m", "key1": "seq", "key2": ""},
		{"key": "m.tenant.user.op", "domain": "m", "key1": "tenant", "key2": "user"},
		{"key": "m.remote_address_10.0.0.1", "domain": "m", "key1": "remote_address_10_0_0_1", "key2": ""},
		{"key": "m.port:80", "domain": "m", "key1": "port_80", "key2": ""},
	}, labels)
	for key, want := range map[string][4]string{
		"":          {"", "", "", ""},
		"nodot":     {"nodot", "", "", ""},
		"a.b.c.d.e": {"a.b.c.d.e", "a", "b", "c"},
		"a|b.c":     {"a|b.c", "a_b", "c", ""},
	} {
		assert.Equal(t, want, newRuleCounters(key).labels, "key %q", key)
	}
}

// TestMetricsCardinalityIsBoundedByTheRules: values matched by a wildcard,
// detailed_metric and value_to_metric rules, requests with their own limit
// (matching a rule or not), unknown domains and unmatched keys add no
// series: there is one per rule hit, and "m.override" for own limits that
// match no rule, whatever the values.
func TestMetricsCardinalityIsBoundedByTheRules(t *testing.T) {
	ms := newMetricsServer(t, metricsRules)
	values := 200
	if testing.Short() {
		values = 50
	}
	for i := range values {
		v := fmt.Sprintf("v%d", i)
		ms.call(t, "m", 1, desc("path", "/api/"+v))
		ms.call(t, "m", 1, desc("tenant", v, "user", v, "op", v))
		own := desc("generic", v)
		own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE}
		ms.call(t, "m", 1, own)
		own = desc("no_rule_"+v, v)
		own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 5, Unit: typev3.RateLimitUnit_MINUTE}
		ms.call(t, "m", 1, own)
		ms.call(t, "domain_"+v, 1, desc("seq", v))
		ms.call(t, "m", 1, desc("unknown_"+v, v))
	}
	got, labels := ms.series(t)
	assert.Len(t, labels, 4, "one series per rule: %v", labels)
	n := uint64(values)
	assert.Equal(t, counts{total: n, within: n}, got["m.path_/api/*"])
	assert.Equal(t, counts{total: n, within: n}, got["m.tenant.user.op"])
	assert.Equal(t, n, got["m.generic"].total, "own limits matching the rule count under it")
	assert.Equal(t, n, got["m.override"].total, "own limits matching no rule")
	for _, l := range labels {
		for name, v := range l {
			assert.NotContains(t, v, "v1", "label %s holds a descriptor value", name)
		}
	}
}

// TestMetricsAfterReload: a reload that removes a rule takes its series
// off /metrics; a rule kept, even with a new limit, keeps its series, whose
// counters never go down; a rule that comes back starts from zero; and
// hotlimit_keys drops the keys of a limiter no rule names any more.
func TestMetricsAfterReload(t *testing.T) {
	two := "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 10}\n" +
		"  - key: gone\n    rate_limit: {unit: hour, requests_per_unit: 7}\n"
	changed := "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 20}\n"
	ms := newMetricsServer(t, two)
	for i := range 3 {
		ms.call(t, "m", 1, desc("kept", fmt.Sprint(i)))
		ms.call(t, "m", 2, desc("gone", fmt.Sprint(i)))
	}
	before, _ := ms.series(t)
	require.Equal(t, counts{total: 3, within: 3}, before["m.kept"])
	require.Equal(t, counts{total: 6, within: 6}, before["m.gone"])
	require.Equal(t, 6.0, ms.keysGauge(t), "3 keys in each rule's limiter")

	ms.write(t, changed)
	require.NoError(t, ms.srv.ReloadDir(ms.dir))
	after, labels := ms.series(t)
	assert.Len(t, labels, 1, "only the kept rule: %v", labels)
	assert.NotContains(t, after, "m.gone", "a removed rule's series leaves")
	assert.Equal(t, before["m.kept"], after["m.kept"], "a kept rule's series goes on where it was")
	assert.Equal(t, 0.0, ms.keysGauge(t), "neither limiter is in force: no key is held")

	// A decision of the removed rule still under way when the reload
	// landed counts nowhere that is exported.
	ms.m.Observe(hotlimit.Event{Source: &hotlimit.Source{Rule: "m.gone"}, Outcome: hotlimit.OutcomeAllowed, N: 1})
	ms.call(t, "m", 1, desc("kept", "0"))
	after, labels = ms.series(t)
	assert.Len(t, labels, 1)
	assert.Equal(t, counts{total: 4, within: 4}, after["m.kept"], "counting on, never down")

	ms.write(t, two)
	require.NoError(t, ms.srv.ReloadDir(ms.dir))
	ms.call(t, "m", 1, desc("gone", "0"))
	after, _ = ms.series(t)
	assert.Equal(t, counts{total: 1, within: 1}, after["m.gone"], "a rule back is a new series from zero")
	assert.Equal(t, counts{total: 4, within: 4}, after["m.kept"])
}

// TestMetricsObserveAllocatesNothing: once a rule has been seen, counting a
// decision of it, passed or over, allocates nothing.
func TestMetricsObserveAllocatesNothing(t *testing.T) {
	m := NewMetrics()
	src := &hotlimit.Source{Rule: "m.seq", Policy: hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10}}
	passed := hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeNearLimit, N: 2, Decision: hotlimit.Decision{Allowed: true, Limit: 10, Remaining: 1}}
	denied := hotlimit.Event{Source: src, Outcome: hotlimit.OutcomeShadowDenied, N: 3, Decision: hotlimit.Decision{Limit: 10, Remaining: 1}}
	m.Observe(passed)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		m.Observe(passed)
		m.Observe(denied)
	}))
	c, ok := m.rules.Load("m.seq")
	require.True(t, ok)
	// AllocsPerRun runs the function once more than asked, to warm up.
	// passed: 7 → 9, one hit past 8; denied: 9 → 12, 2 over, 1 near.
	assert.EqualValues(t, 102*1+101*1, c.near.Load())
	assert.EqualValues(t, 101*2, c.shadow.Load())
}

// failingLimiter is a backend that fails every decision.
type failingLimiter struct{ hotlimit.Limiter }

func (failingLimiter) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return hotlimit.Decision{}, errors.New("backend down")
}

// TestMetricsCountRequestsAndErrors: every ShouldRateLimit call counts in
// ratelimit_service_total_requests, as the reference's gRPC stat mapped;
// one the backend could not decide counts as a redis_error and one refused
// as invalid as a service_error, the reference's should_rate_limit errors.
func TestMetricsCountRequestsAndErrors(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n  - key: mem\n    rate_limit: {unit: second, requests_per_unit: 6}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		if c.Limit == 5 {
			return failingLimiter{lim}, err
		}
		return lim, err
	}
	m := NewMetrics()
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithObserver(m), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	call := func(domain, key string) error {
		_, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: domain, Descriptors: []*rlext.RateLimitDescriptor{desc(key, "1")}})
		return err
	}
	require.NoError(t, call("web", "mem"))
	require.NoError(t, call("web", "mem"))
	assert.Equal(t, codes.Unavailable, status.Code(call("web", "ip")))
	assert.Equal(t, codes.InvalidArgument, status.Code(call("", "mem")))
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP ratelimit_service_should_rate_limit_error ShouldRateLimit requests answered with an error: redis_error when the backend could not decide, service_error for the others.
# TYPE ratelimit_service_should_rate_limit_error counter
ratelimit_service_should_rate_limit_error{err_type="redis_error"} 1
ratelimit_service_should_rate_limit_error{err_type="service_error"} 1
# HELP ratelimit_service_total_requests ShouldRateLimit requests, over gRPC and /json.
# TYPE ratelimit_service_total_requests counter
ratelimit_service_total_requests{grpc_method="ShouldRateLimit"} 4
`), "ratelimit_service_total_requests", "ratelimit_service_should_rate_limit_error"))
}

// TestMetricsReloadsUnderTraffic: while requests hit a rule that every
// configuration keeps and reloads add and remove another, each scrape sees
// the kept rule's counter at least where the previous scrape saw it, and
// in the end it has counted every hit: reloads lose no count of a live
// series and never make it go down.
func TestMetricsReloadsUnderTraffic(t *testing.T) {
	with := "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n" +
		"  - key: toggled\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n"
	without := "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 1000000}\n"
	ms := newMetricsServer(t, with)
	cfgWith, err := LoadDir(ms.dir)
	require.NoError(t, err)
	ms.write(t, without)
	cfgWithout, err := LoadDir(ms.dir)
	require.NoError(t, err)

	workers, each, reloads := 4, 200, 50
	if testing.Short() {
		each, reloads = 50, 20
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ms.call(t, "m", 1, desc("kept", fmt.Sprint(w)))
				ms.call(t, "m", 1, desc("toggled", fmt.Sprint(i)))
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	last := uint64(0)
	for i := 0; ; i++ {
		cfg := cfgWith
		if i%2 == 1 {
			cfg = cfgWithout
		}
		if i < reloads {
			require.NoError(t, ms.srv.Reload(cfg))
		}
		got, _ := ms.series(t)
		require.GreaterOrEqual(t, got["m.kept"].total, last, "scrape %d", i)
		last = got["m.kept"].total
		select {
		case <-done:
			got, _ = ms.series(t)
			assert.Equal(t, uint64(workers*each), got["m.kept"].total, "every hit of the kept rule")
			assert.Equal(t, got["m.kept"].total, got["m.kept"].within)
			return
		default:
		}
	}
}
