package envoyrls

import (
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/puzpuzpuz/xsync/v3"
)

// Metrics counts decisions per rule under the reference server's stat names,
// as Prometheus counters labelled by the rule's key (such as "rl.foo.bar"),
// which the configuration bounds: never a label per descriptor value.
//
//	ratelimit_service_rate_limit_total_hits{key}    hits asked for
//	ratelimit_service_rate_limit_over_limit{key}    hits over the limit (shadow mode included)
//	ratelimit_service_rate_limit_near_limit{key}    hits that passed leaving at most 20% of the limit (or burst)
//	ratelimit_service_rate_limit_within_limit{key}  hits that passed
//	ratelimit_service_rate_limit_shadow_mode{key}   hits over a limit in shadow mode, answered OK
//	ratelimit_service_config_load_success           configurations put in force
//	ratelimit_service_config_load_error             configurations rejected
//	hotlimit_fallbacks_total{backend, reason}       decisions the backend (Redis) could not make,
//	                                                by reason: timeout, breaker_open, canceled,
//	                                                clock_range, error
//	hotlimit_keys{limiter}                          keys held, per function given to WatchKeys
//
// A hit is a request's hits_addend: a request of 5 hits counts 5. Metrics is
// a [hotlimit.FallbackObserver]: give it to [WithObserver] for the
// decisions, to the backend's limiters with hotlimit.WithObserver (in the
// options of redislimit.Factory) for its fallbacks, and register it with a
// Prometheus registry. The fallbacks carry the name and labels hotlimitprom
// gives them. It is safe for concurrent use.
type Metrics struct {
	rules           *xsync.MapOf[string, *ruleCounters]
	loadOK, loadErr atomic.Uint64
	// fallbacks counts by backend and reason, both from small fixed sets.
	fallbacks *xsync.MapOf[fallbackKey, *atomic.Uint64]
	mu        sync.Mutex
	keys      map[string]func() int // WatchKeys's functions, by limiter name
}

// fallbackKey is a fallback's labels.
type fallbackKey struct{ backend, reason string }

type ruleCounters struct {
	total, over, near, within, shadow atomic.Uint64
}

var (
	descTotal    = prometheus.NewDesc("ratelimit_service_rate_limit_total_hits", "Hits asked for, by rule.", []string{"key"}, nil)
	descOver     = prometheus.NewDesc("ratelimit_service_rate_limit_over_limit", "Hits over the limit, shadow mode included, by rule.", []string{"key"}, nil)
	descNear     = prometheus.NewDesc("ratelimit_service_rate_limit_near_limit", "Hits that passed leaving at most 20% of the limit (of the burst, for a rule with one), by rule.", []string{"key"}, nil)
	descWithin   = prometheus.NewDesc("ratelimit_service_rate_limit_within_limit", "Hits that passed, by rule.", []string{"key"}, nil)
	descShadow   = prometheus.NewDesc("ratelimit_service_rate_limit_shadow_mode", "Hits over a limit in shadow mode, answered OK, by rule.", []string{"key"}, nil)
	descLoadOK   = prometheus.NewDesc("ratelimit_service_config_load_success", "Configurations put in force.", nil, nil)
	descLoadErr  = prometheus.NewDesc("ratelimit_service_config_load_error", "Configurations rejected.", nil, nil)
	descFallback = prometheus.NewDesc("hotlimit_fallbacks_total",
		"Decisions a backend could not make, made by its failure policy, by backend and reason.", []string{"backend", "reason"}, nil)
	descKeys = prometheus.NewDesc("hotlimit_keys", "Keys held, by limiter.", []string{"limiter"}, nil)
)

// NewMetrics returns empty metrics.
func NewMetrics() *Metrics {
	return &Metrics{rules: xsync.NewMapOf[string, *ruleCounters](), fallbacks: xsync.NewMapOf[fallbackKey, *atomic.Uint64]()}
}

// Observe counts e under e.Rule; see [hotlimit.Observer].
func (m *Metrics) Observe(e hotlimit.Event) {
	rule := e.RuleName()
	c, ok := m.rules.Load(rule)
	if !ok {
		c, _ = m.rules.LoadOrCompute(rule, func() *ruleCounters { return &ruleCounters{} })
	}
	n := uint64(max(e.N, 0))
	c.total.Add(n)
	switch e.Outcome {
	case hotlimit.OutcomeDenied:
		c.over.Add(n)
	case hotlimit.OutcomeShadowDenied:
		c.over.Add(n)
		c.shadow.Add(n)
	case hotlimit.OutcomeNearLimit:
		c.near.Add(n)
		c.within.Add(n)
	case hotlimit.OutcomeAllowed:
		c.within.Add(n)
	}
}

// ObserveFallback counts f under its backend and reason; see
// [hotlimit.FallbackObserver].
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	k := fallbackKey{f.Backend, f.Reason}
	c, ok := m.fallbacks.Load(k)
	if !ok {
		c, _ = m.fallbacks.LoadOrCompute(k, func() *atomic.Uint64 { return new(atomic.Uint64) })
	}
	c.Add(1)
}

// ConfigLoaded counts a configuration put in force (ok) or rejected.
func (m *Metrics) ConfigLoaded(ok bool) {
	if ok {
		m.loadOK.Add(1)
	} else {
		m.loadErr.Add(1)
	}
}

// Describe sends the metrics' descriptions; see [prometheus.Collector].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descTotal, descOver, descNear, descWithin, descShadow, descLoadOK, descLoadErr, descFallback, descKeys} {
		ch <- d
	}
}

// Collect sends the counters' values; see [prometheus.Collector].
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descLoadOK, prometheus.CounterValue, float64(m.loadOK.Load()))
	ch <- prometheus.MustNewConstMetric(descLoadErr, prometheus.CounterValue, float64(m.loadErr.Load()))
	m.rules.Range(func(key string, c *ruleCounters) bool {
		for _, v := range []struct {
			d *prometheus.Desc
			n *atomic.Uint64
		}{{descTotal, &c.total}, {descOver, &c.over}, {descNear, &c.near}, {descWithin, &c.within}, {descShadow, &c.shadow}} {
			ch <- prometheus.MustNewConstMetric(v.d, prometheus.CounterValue, float64(v.n.Load()), key)
		}
		return true
	})
	m.fallbacks.Range(func(k fallbackKey, c *atomic.Uint64) bool {
		ch <- prometheus.MustNewConstMetric(descFallback, prometheus.CounterValue, float64(c.Load()), k.backend, k.reason)
		return true
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.keys {
		ch <- prometheus.MustNewConstMetric(descKeys, prometheus.GaugeValue, float64(keys()), name)
	}
}

// WatchKeys exports keys(), read at each scrape, as hotlimit_keys with the
// label limiter=name, as hotlimitprom does: pass [Server.Len]. A second call
// with the same name replaces the first; a nil keys removes it.
func (m *Metrics) WatchKeys(name string, keys func() int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		delete(m.keys, name)
		return
	}
	if m.keys == nil {
		m.keys = map[string]func() int{}
	}
	m.keys[name] = keys
}

var (
	_ hotlimit.FallbackObserver = (*Metrics)(nil)
	_ prometheus.Collector      = (*Metrics)(nil)
)
