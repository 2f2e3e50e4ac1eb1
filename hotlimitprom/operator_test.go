package hotlimitprom_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/hotlimitprom"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// scrape is one scrape of /metrics, parsed: the value of each series by
// metric name and its labels, written as `name{l="v",...}` with the labels
// sorted and their values quoted by strconv.Quote.
type scrape struct {
	series map[string]float64
	types  map[string]dto.MetricType
	labels map[string][]string // metric name -> label names, sorted, of its series
}

// get returns the series of name with labels (in the order name=value, ...).
func (s scrape) get(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	key := seriesKey(name, labels...)
	v, ok := s.series[key]
	require.True(t, ok, "no series %s in the scrape", key)
	return v
}

// sum adds the series of name whose labels include labels, as PromQL's
// sum(name{labels}) does.
func (s scrape) sum(name string, labels ...string) float64 {
	total := 0.0
	for key, v := range s.series {
		if !strings.HasPrefix(key, name+"{") {
			continue
		}
		ok := true
		for i := 0; i < len(labels); i += 2 {
			if !strings.Contains(key, labels[i]+"="+strconv.Quote(labels[i+1])) {
				ok = false
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

func seriesKey(name string, labels ...string) string {
	pairs := make([]string, 0, len(labels)/2)
	for i := 0; i < len(labels); i += 2 {
		pairs = append(pairs, labels[i]+"="+strconv.Quote(labels[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// scrapeOver GETs url and parses the text exposition format.
func scrapeOver(t *testing.T, url string) scrape {
	t.Helper()
	res, err := http.Get(url)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	require.NoError(t, err)
	out := scrape{series: map[string]float64{}, types: map[string]dto.MetricType{}, labels: map[string][]string{}}
	for name, f := range families {
		out.types[name] = f.GetType()
		for _, m := range f.GetMetric() {
			var labels, names []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
				names = append(names, l.GetName())
			}
			sort.Strings(names)
			out.labels[name] = names
			v := m.GetCounter().GetValue()
			if f.GetType() == dto.MetricType_GAUGE {
				v = m.GetGauge().GetValue()
			}
			out.series[seriesKey(name, labels...)] = v
		}
	}
	return out
}

// operator is a service on the test's rules, reporting to Prometheus
// metrics served over HTTP, on a clock the test moves.
type operator struct {
	svc *service.Service
	m   *hotlimitprom.Metrics
	url string
	now *atomic.Int64
}

func newOperator(t *testing.T, rulesJSON string) *operator {
	t.Helper()
	rules, err := service.LoadRules(strings.NewReader(rulesJSON))
	require.NoError(t, err)
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	now := new(atomic.Int64)
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m))
	require.NoError(t, err)
	m.WatchKeys("api", svc.Len)
	return &operator{svc: svc, m: m, url: srv.URL + "/metrics", now: now}
}

// tally is what the callers saw, by rule: the ground truth the metrics must
// match.
type tally struct {
	decisions, requests, deniedRequests, deniedDecisions float64
}

// TestOperatorMetricsAndQueries drives a known sequence through a
// service on rules read from JSON (a default, an allow-listed user, a rule
// of two limits, a rule with a limit in shadow mode, and TakeWith plans),
// scrapes /metrics over HTTP, and checks every metric the README documents:
// its name, type, labels and values, and what the README's queries compute
// on two scrapes against what the callers saw.
func TestOperatorMetricsAndQueries(t *testing.T) {
	op := newOperator(t, limitertest.OperatorRules)
	svc := op.svc
	plan := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second}
	bigPlan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 50, Window: time.Minute}

	// Warm-up: one decision per rule, so that the first scrape holds every
	// series at its starting value, as a rate() over a live service sees it.
	require.True(t, svc.Allow("warm", "GET /"))
	require.True(t, svc.Allow("partner", "GET /"))
	require.True(t, svc.Take("warm", "GET /pay", 1).Allowed)
	require.True(t, svc.Take("warm", "GET /new", 1).Allowed)
	_, err := svc.TakeWith("warm", "GET /", bigPlan, 1)
	require.NoError(t, err)
	before := scrapeOver(t, op.url)

	truth := map[string]*tally{}
	record := func(rule string, n int, passed bool) {
		tl := truth[rule]
		if tl == nil {
			tl = &tally{}
			truth[rule] = tl
		}
		tl.decisions++
		tl.requests += float64(n)
		if !passed {
			tl.deniedDecisions++
			tl.deniedRequests += float64(n)
		}
	}

	// default, TokenBucket 5/s: alice's 7 calls pass with Remaining 4 3 2
	// (allowed), 1 0 (near: at most 20% of 5), then 2 denials.
	for range 7 {
		record("default", 1, svc.Allow("alice", "GET /"))
	}
	// The allow-listed user never meets a limit: 50 allowed.
	for range 25 {
		record(`users["partner"]`, 2, svc.Take("partner", "GET /", 2).Allowed)
	}
	// GET /pay, 10/s burst 20 per pair and 100/min per api: bob takes 4
	// at a time: Remaining 16 12 8 (allowed), 4 0 (near: at most 20% of
	// the burst 20), then denied.
	for range 6 {
		record(`apis["GET /pay"]`, 4, svc.Take("bob", "GET /pay", 4).Allowed)
	}
	// GET /new, 10/min enforced and 2/min in shadow mode: carol's 6 calls
	// all pass; the shadow limit would have denied the last 4 (Remaining
	// 1, 0, then none); the enforced limit has Remaining 9..4 (allowed).
	for range 6 {
		record(`apis["GET /new"]`, 1, svc.Allow("carol", "GET /new"))
	}
	// TakeWith a plan of 3/s: 2 pass (Remaining 1: allowed, since 1 > 0.6),
	// 2 denied; a second plan counts apart and passes.
	for range 2 {
		d, err := svc.TakeWith("dave", "GET /", plan, 2)
		require.NoError(t, err)
		record(service.OverrideRule, 2, d.Allowed)
	}
	d, err := svc.TakeWith("dave", "GET /", bigPlan, 1)
	require.NoError(t, err)
	record(service.OverrideRule, 1, d.Allowed)

	// Fallbacks come from redislimit, a module of its own: reported here
	// as it reports them, one per documented reason.
	reasons := []string{"timeout", "breaker_open", "canceled", "clock_range", "error"}
	for _, reason := range reasons {
		op.m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: reason})
	}

	after := scrapeOver(t, op.url)

	// Names, types and labels, as the README's table documents them.
	for name, labels := range map[string][]string{
		"hotlimit_decisions_total": {"outcome", "rule"},
		"hotlimit_requests_total":  {"outcome", "rule"},
		"hotlimit_fallbacks_total": {"backend", "reason"},
		"hotlimit_keys":            {"limiter"},
	} {
		require.Contains(t, after.types, name)
		assert.Equal(t, labels, after.labels[name], name)
	}
	assert.Equal(t, dto.MetricType_COUNTER, after.types["hotlimit_decisions_total"])
	assert.Equal(t, dto.MetricType_COUNTER, after.types["hotlimit_requests_total"])
	assert.Equal(t, dto.MetricType_COUNTER, after.types["hotlimit_fallbacks_total"])
	assert.Equal(t, dto.MetricType_GAUGE, after.types["hotlimit_keys"])
	for _, reason := range reasons {
		assert.Equal(t, 1.0, after.get(t, "hotlimit_fallbacks_total", "backend", "redis", "reason", reason), reason)
	}
	assert.Equal(t, float64(svc.Len()), after.get(t, "hotlimit_keys", "limiter", "api"))
	// Keys held: the default's, warm's and alice's (2); GET /pay's bucket,
	// warm's and bob's pairs (2), and its window, one key for the api (1);
	// GET /new's two limits, each warm's and carol's (2+2); the big plan's,
	// warm's and dave's (2), and the small plan's, dave's (1). The
	// allow-list keeps none.
	assert.Equal(t, 2.0+2+1+2+2+2+1, after.get(t, "hotlimit_keys", "limiter", "api"))

	delta := func(name string, labels ...string) float64 {
		return after.sum(name, labels...) - before.sum(name, labels...)
	}
	wantOutcomes := map[string]map[string]float64{ // decisions, by rule and outcome
		"default":            {"allowed": 3, "near_limit": 2, "denied": 2, "shadow_denied": 0},
		`users["partner"]`:   {"allowed": 25, "near_limit": 0, "denied": 0, "shadow_denied": 0},
		`apis["GET /pay"]`:   {"allowed": 3, "near_limit": 2, "denied": 1, "shadow_denied": 0},
		`apis["GET /new"]`:   {"allowed": 2, "near_limit": 0, "denied": 0, "shadow_denied": 4},
		service.OverrideRule: {"allowed": 2, "near_limit": 0, "denied": 1, "shadow_denied": 0},
	}
	for rule, outcomes := range wantOutcomes {
		for outcome, want := range outcomes {
			// Each rule exports its four outcomes from its first decision.
			after.get(t, "hotlimit_decisions_total", "rule", rule, "outcome", outcome)
			after.get(t, "hotlimit_requests_total", "rule", rule, "outcome", outcome)
			assert.Equal(t, want, delta("hotlimit_decisions_total", "rule", rule, "outcome", outcome), "%s %s", rule, outcome)
		}
		tl := truth[rule]
		require.NotNil(t, tl, rule)
		assert.Equal(t, tl.decisions, delta("hotlimit_decisions_total", "rule", rule), rule)
		assert.Equal(t, tl.requests, delta("hotlimit_requests_total", "rule", rule), rule)
	}

	// The README's queries, on rates over the window between the scrapes
	// (the window cancels out of the shares).
	window := 60.0
	rate := func(name string, labels ...string) float64 { return delta(name, labels...) / window }
	for rule, tl := range truth {
		// share of requests denied, per rule
		denied := rate("hotlimit_requests_total", "rule", rule, "outcome", "denied") / rate("hotlimit_requests_total", "rule", rule)
		assert.InDelta(t, tl.deniedRequests/tl.requests, denied, 1e-9, "denied share of %s", rule)
		// share of decisions denied
		deniedDecisions := rate("hotlimit_decisions_total", "rule", rule, "outcome", "denied") / rate("hotlimit_decisions_total", "rule", rule)
		assert.InDelta(t, tl.deniedDecisions/tl.decisions, deniedDecisions, 1e-9, "denied decisions of %s", rule)
	}
	// rules running close to their limit: those whose near_limit rate is
	// above zero.
	var near []string
	for rule := range wantOutcomes {
		if rate("hotlimit_decisions_total", "rule", rule, "outcome", "near_limit") > 0 {
			near = append(near, rule)
		}
	}
	sort.Strings(near)
	assert.Equal(t, []string{`apis["GET /pay"]`, "default"}, near)
	// near-limit share: the share of decisions that passed close to the
	// limit, per rule.
	assert.InDelta(t, 2.0/7, rate("hotlimit_decisions_total", "rule", "default", "outcome", "near_limit")/
		rate("hotlimit_decisions_total", "rule", "default"), 1e-9)
	// shadow mode's would-be denials: what enforcing the limit would deny,
	// as a share of the rule's requests.
	assert.InDelta(t, 4.0/6, rate("hotlimit_requests_total", "rule", `apis["GET /new"]`, "outcome", "shadow_denied")/
		rate("hotlimit_requests_total", "rule", `apis["GET /new"]`), 1e-9)
	assert.Zero(t, truth[`apis["GET /new"]`].deniedRequests, "a shadow limit denies no caller")
}

// TestOperatorReload reloads the rules, by Replace and by WatchFile,
// with a rule removed, one renamed and one whose limit changed, and checks
// what a scrape shows: no counter of a rule goes down, the series of a rule
// no longer in force stay at their last value (so rate() over them falls to
// zero, and a rule that comes back counts on from there), the series of a
// changed rule count on, and hotlimit_keys follows the keys the service
// holds, dropping those of the limiters no rule uses any more.
func TestOperatorReload(t *testing.T) {
	op := newOperator(t, limitertest.OperatorRules)
	svc := op.svc
	for range 7 {
		svc.Allow("alice", "GET /")
	}
	for range 3 {
		svc.Allow("partner", "GET /")
		svc.Allow("carol", "GET /new")
	}
	before := scrapeOver(t, op.url)
	require.Equal(t, 7.0, before.sum("hotlimit_decisions_total", "rule", "default"))
	require.Equal(t, float64(svc.Len()), before.get(t, "hotlimit_keys", "limiter", "api"))

	// The default's limit goes from 5 to 8 per second, the partner's
	// allow-list is removed, GET /new is renamed GET /v2/new with the same
	// limits, and GET /pay stays.
	reloaded := strings.NewReplacer(
		`"limit": 5,`, `"limit": 8,`,
		`"users":   {"partner": [{"algorithm": "Unlimited"}]},`, ``,
		`"GET /new"`, `"GET /v2/new"`,
	).Replace(limitertest.OperatorRules)
	require.NotEqual(t, limitertest.OperatorRules, reloaded)
	dir := t.TempDir()
	path := dir + "/rules.json"
	require.NoError(t, os.WriteFile(path, []byte(reloaded), 0o600))

	for _, how := range []string{"Replace", "WatchFile"} {
		t.Run(how, func(t *testing.T) {
			if how == "Replace" {
				rules, err := service.LoadRules(strings.NewReader(reloaded))
				require.NoError(t, err)
				require.NoError(t, svc.Replace(rules))
			} else {
				// Back to the first rules, then the file.
				rules, err := service.LoadRules(strings.NewReader(limitertest.OperatorRules))
				require.NoError(t, err)
				require.NoError(t, svc.Replace(rules))
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				loaded := make(chan service.Reload, 1)
				done := make(chan struct{})
				go func() {
					defer close(done)
					svc.WatchFileWith(ctx, path, service.WatchOptions{Interval: time.Hour,
						OnReload: func(r service.Reload) { loaded <- r },
						OnError:  func(err error) { t.Error(err) }})
				}()
				r := <-loaded // the first read, at once
				cancel()
				<-done
				require.Contains(t, r.Rules.APIs, "GET /v2/new")
			}
			mid := scrapeOver(t, op.url)
			// Nothing went down, nothing was reset, and the removed and
			// renamed rules' series are still there, unchanged.
			for key, v := range before.series {
				if strings.HasPrefix(key, "hotlimit_keys") {
					continue
				}
				got, ok := mid.series[key]
				if assert.True(t, ok, "%s is gone after the reload", key) {
					assert.GreaterOrEqual(t, got, v, key)
				}
			}
			assert.Equal(t, before.sum("hotlimit_decisions_total", "rule", `users["partner"]`), mid.sum("hotlimit_decisions_total", "rule", `users["partner"]`))
			// The keys gauge is the service's: the default's limiter (5/s)
			// is dropped with alice's key, so it does not count any more.
			assert.Equal(t, float64(svc.Len()), mid.get(t, "hotlimit_keys", "limiter", "api"))
			assert.Less(t, mid.get(t, "hotlimit_keys", "limiter", "api"), before.get(t, "hotlimit_keys", "limiter", "api"))

			// Traffic after the reload: the default counts on, under its
			// new limit (8 more pass for a new key: 8 allowed or near);
			// partner's requests fall to the default; the renamed rule
			// counts under its new name.
			wasDefault := mid.sum("hotlimit_decisions_total", "rule", "default")
			wasPartner := mid.sum("hotlimit_decisions_total", "rule", `users["partner"]`)
			wasRenamed := mid.sum("hotlimit_decisions_total", "rule", `apis["GET /v2/new"]`)
			for range 10 {
				svc.Allow("erin", "GET /")
			}
			svc.Allow("partner", "GET /")
			svc.Allow("carol", "GET /v2/new")
			after := scrapeOver(t, op.url)
			assert.Equal(t, wasDefault+11, after.sum("hotlimit_decisions_total", "rule", "default"))
			assert.Equal(t, wasPartner, after.sum("hotlimit_decisions_total", "rule", `users["partner"]`), "a removed rule's series stays still")
			assert.Equal(t, wasRenamed+1, after.sum("hotlimit_decisions_total", "rule", `apis["GET /v2/new"]`))
			assert.Equal(t, float64(svc.Len()), after.get(t, "hotlimit_keys", "limiter", "api"))
			before = after
		})
	}
}

// TestOperatorLabelsStayBoundedByTheRules sends requests from
// thousands of users to thousands of APIs, names made of any bytes (quotes,
// braces, new lines, invalid UTF-8) and some equal to a rule's, and asks
// under a hundred TakeWith plans: the scrape's label values are the rules'
// names and the four outcomes, however many keys and plans there are.
func TestOperatorLabelsStayBoundedByTheRules(t *testing.T) {
	op := newOperator(t, limitertest.OperatorRules)
	svc := op.svc
	names := []string{"partner", "GET /pay", "GET /new", `apis["GET /pay"]`, "default", "override", "\xff\xfe", "a\"}\n{b=\"c"}
	users, apis, plans := 2000, 500, 100
	if testing.Short() {
		users, apis, plans = 200, 50, 20
	}
	name := func(i int) string {
		if i%7 == 0 {
			return names[i%len(names)]
		}
		return "n" + strconv.Itoa(i) + "\x00\"{}\n" + string(rune(0x10000+i))
	}
	for i := range users {
		svc.Allow(name(i), name(i%apis))
		svc.Take(name(i), name((i*31)%apis), 2)
	}
	for i := range plans {
		c := hotlimit.Config{Algorithm: hotlimit.Algorithm(1 + i%3), Limit: 1 + i, Window: time.Second, Scope: hotlimit.Scope(i % 4), Shadow: i%2 == 0}
		_, err := svc.TakeWith(name(i), name(i), c, 1)
		require.NoError(t, err)
	}
	// Invalid plans decide nothing and report nothing.
	_, err := svc.TakeWith("u", "a", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: -1, Window: time.Second}, 1)
	require.Error(t, err)

	s := scrapeOver(t, op.url)
	rules := map[string]bool{"default": true, `users["partner"]`: true, `apis["GET /pay"]`: true, `apis["GET /new"]`: true, service.OverrideRule: true}
	outcomes := map[string]bool{"allowed": true, "near_limit": true, "denied": true, "shadow_denied": true}
	seenRules := map[string]bool{}
	for _, family := range []string{"hotlimit_decisions_total", "hotlimit_requests_total"} {
		parser := 0
		for key := range s.series {
			if !strings.HasPrefix(key, family+"{") {
				continue
			}
			parser++
			rule, outcome := labelOf(t, key, "rule"), labelOf(t, key, "outcome")
			assert.True(t, rules[rule], "rule label %q is not a rule's name", rule)
			assert.True(t, outcomes[outcome], "outcome label %q", outcome)
			seenRules[rule] = true
		}
		assert.Equal(t, len(rules)*len(outcomes), parser, "%s: one series per rule and outcome", family)
	}
	assert.Len(t, seenRules, len(rules), "every rule decided")
	total := 0.0
	for rule := range rules {
		total += s.sum("hotlimit_decisions_total", "rule", rule)
	}
	assert.Equal(t, float64(2*users+plans), total, "every decision is counted, under some rule")
}

// labelOf returns the value of the label l in a series key of scrapeOver.
func labelOf(t *testing.T, key, l string) string {
	t.Helper()
	i := strings.Index(key, l+`="`)
	require.GreaterOrEqual(t, i, 0, "no label %s in %s", l, key)
	v, err := strconv.QuotedPrefix(key[i+len(l)+1:])
	require.NoError(t, err)
	u, err := strconv.Unquote(v)
	require.NoError(t, err)
	return u
}

// TestServiceDecisionsDoNotAllocate: a service reporting to the metrics
// allocates nothing per decision once its rules have been seen, for a rule
// of one limit (Allow and Take), one of several with a limit in shadow
// mode, an allow-list, and TakeWith; nor per fallback.
func TestServiceDecisionsDoNotAllocate(t *testing.T) {
	op := newOperator(t, `{
	  "default": [{"algorithm": "TokenBucket", "limit": 1000000, "window": "1s"}],
	  "users":   {"partner": [{"algorithm": "Unlimited"}]},
	  "apis":    {"pay": [{"algorithm": "TokenBucket", "limit": 1000000, "window": "1s"},
	                      {"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]}
	}`)
	svc := op.svc
	plan := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1000000, Window: time.Second}
	for name, decide := range map[string]func(){
		"Allow":      func() { svc.Allow("alice", "GET /") },
		"Take":       func() { svc.Take("alice", "GET /", 2) },
		"several":    func() { svc.Take("alice", "pay", 1) },
		"allow-list": func() { svc.Allow("partner", "GET /") },
		"TakeWith":   func() { _, _ = svc.TakeWith("alice", "GET /", plan, 1) },
		"fallback":   func() { op.m.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: "timeout"}) },
	} {
		decide()
		assert.Zero(t, testing.AllocsPerRun(200, decide), name)
	}
}

// cappedService returns a service of the rules in JSON, capped at 3 keys
// per limiter, on a frozen clock (no key turns idle), reporting to a
// Metrics that watches its keys as limiter "api", and the URL of that
// Metrics' /metrics.
func cappedService(t *testing.T, rules string) (*service.Service, string) {
	t.Helper()
	rs, err := service.LoadRules(strings.NewReader(rules))
	require.NoError(t, err)
	m := hotlimitprom.New()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	var now atomic.Int64
	svc, err := service.NewFromRules(rs, hotlimit.WithClock(now.Load), hotlimit.WithObserver(m), hotlimit.WithMaxKeys(3))
	require.NoError(t, err)
	m.WatchKeys("api", svc.Len)
	return svc, srv.URL
}

// TestOperatorKeyCap: under hotlimit.WithMaxKeys, the keys held show
// in hotlimit_keys at the cap, and the new keys denied at the cap show as
// denied for their rule, as the README says.
func TestOperatorKeyCap(t *testing.T) {
	svc, url := cappedService(t, `{"default": [{"algorithm": "TokenBucket", "limit": 5, "window": "1s"}]}`)
	passed := 0
	for i := range 10 {
		if svc.Allow("user"+strconv.Itoa(i), "GET /") {
			passed++
		}
	}
	require.Equal(t, 3, passed, "three keys fit under the cap")
	s := scrapeOver(t, url)
	assert.Equal(t, 3.0, s.get(t, "hotlimit_keys", "limiter", "api"))
	assert.Equal(t, 7.0, s.get(t, "hotlimit_decisions_total", "rule", "default", "outcome", "denied"))
	assert.Equal(t, 3.0, s.get(t, "hotlimit_decisions_total", "rule", "default", "outcome", "allowed"))
}

// TestOperatorKeyCapOfSeveralLimits: under hotlimit.WithMaxKeys, each
// limiter of a service is capped apart and hotlimit_keys reads the service's
// Len, their sum, so with several limits it does not read the cap when one
// of them is at it, as the README says: that one shows in its rule's
// denied, and under a limit in shadow mode, in shadow_denied, the new keys
// passing. A limiter used on its own reports no decisions: only the keys
// given to WatchKeys.
func TestOperatorKeyCapOfSeveralLimits(t *testing.T) {
	svc, url := cappedService(t, `{
	  "default": [{"algorithm": "FixedWindow", "limit": 5, "window": "1m"}],
	  "apis":    {"GET /new": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m", "shadow": true}],
	              "GET /pay": [{"algorithm": "TokenBucket", "limit": 9, "window": "1m"}]}
	}`)

	passed := map[string]int{}
	for i := range 5 {
		for _, api := range []string{"GET /", "GET /new"} {
			if svc.Allow("user"+strconv.Itoa(i), api) {
				passed[api]++
			}
		}
	}
	require.True(t, svc.Allow("carol", "GET /pay"))
	assert.Equal(t, map[string]int{"GET /": 3, "GET /new": 5}, passed, "three keys fit under each cap; a shadow limit lets the others through")
	s := scrapeOver(t, url)
	assert.Equal(t, 7.0, s.get(t, "hotlimit_keys", "limiter", "api"), "3 + 3 + 1: the sum over the limiters, not the cap")
	assert.Equal(t, float64(svc.Len()), s.get(t, "hotlimit_keys", "limiter", "api"))
	assert.Equal(t, 2.0, s.get(t, "hotlimit_decisions_total", "rule", "default", "outcome", "denied"))
	assert.Equal(t, 2.0, s.get(t, "hotlimit_decisions_total", "rule", `apis["GET /new"]`, "outcome", "shadow_denied"))
	assert.Zero(t, s.get(t, "hotlimit_decisions_total", "rule", `apis["GET /new"]`, "outcome", "denied"))

	// The README's limiter of its own: WithObserver changes nothing.
	own := hotlimitprom.New()
	ownReg := prometheus.NewPedanticRegistry()
	require.NoError(t, ownReg.Register(own))
	var now atomic.Int64 // frozen: the first key stays held
	lim, err := tokenbucket.New(100, time.Minute, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1), hotlimit.WithObserver(own))
	require.NoError(t, err)
	own.WatchKeys("ip", lim.Len)
	assert.True(t, lim.Allow("ip:192.0.2.1"))
	assert.False(t, lim.Allow("ip:192.0.2.2"), "a new key at the cap")
	families, err := ownReg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	assert.Equal(t, []string{"hotlimit_keys"}, names, "no decision reported")
	require.Len(t, families, 1)
	assert.Equal(t, 1.0, families[0].GetMetric()[0].GetGauge().GetValue())
}
