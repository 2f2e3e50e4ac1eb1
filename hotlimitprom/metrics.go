// Package hotlimitprom exports hotlimit's decisions as Prometheus metrics.
//
// A [Metrics] is a [hotlimit.FallbackObserver]: give it to a service (or any
// limiter that reports to an observer) with [hotlimit.WithObserver], and
// register it with a Prometheus registry:
//
//	m := hotlimitprom.New()
//	prometheus.MustRegister(m)
//	svc, err := service.NewFromRules(rules, hotlimit.WithObserver(m))
//	m.WatchKeys("api", svc.Len)
//
// It exports, with labels bounded by the configuration (never a label per key
// or per user):
//
//	hotlimit_decisions_total{rule, outcome}  counter  decisions, by the rule that decided and
//	                                                  outcome: allowed, near_limit, denied, shadow_denied
//	hotlimit_requests_total{rule, outcome}   counter  requests (a Take of n counts n)
//	hotlimit_fallbacks_total{backend, reason} counter decisions a backend (Redis) could not make,
//	                                                  by reason: timeout, breaker_open, canceled,
//	                                                  clock_range, error
//	hotlimit_keys{limiter}                   gauge    keys held, per function given to WatchKeys
//
// A rule's four outcomes are exported from its first decision, at 0 until
// they happen, so that rate() sees them start; an Event whose Outcome names
// none (a producer's bug) counts as outcome "unknown".
//
// A reload of a service's rules (its Replace or WatchFile)
// resets nothing: a rule whose limits change counts on in the same series,
// and the series of a rule removed or renamed stay at their last value for
// the life of the Metrics, so that no live counter ever goes down. The rule
// names seen since the start bound the series. hotlimit_keys is read at each
// scrape, so it drops the keys of a limiter a reload dropped at once.
//
// Several services may share one Metrics: their rules are counted by name,
// so two services' "default" rules add up. To tell them apart, give each a
// Metrics of its own made with [WithConstLabels], the same label names with
// values of its own (service="checkout", service="search"): they register
// in one registry side by side. The registry refuses a second Metrics made
// alike as a duplicate ([prometheus.AlreadyRegisteredError]), and one whose
// constant label names differ (one without service=, say) as having
// "different label names".
//
// Label values are the names given to the Metrics (rules, backends,
// reasons, limiters); a name that is not valid UTF-8, which Prometheus
// refuses, is exported with U+FFFD in place of each invalid byte sequence.
//
// Observe costs one lock-free map load and two atomic adds, and allocates
// nothing once a rule has been seen.
package hotlimitprom

import (
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
)

// outcomes is the number of hotlimit.Outcome values, the zero one included.
const outcomes = int(hotlimit.OutcomeShadowDenied) + 1

// ruleCounters holds a rule's counters, by outcome; those of the zero
// Outcome stay nil (see observeUnknown).
type ruleCounters struct {
	decisions [outcomes]prometheus.Counter
	requests  [outcomes]prometheus.Counter
}

// Metrics counts decisions and fallbacks; see the package documentation. It
// is safe for concurrent use. The zero value is not usable; call [New].
type Metrics struct {
	decisions *prometheus.CounterVec
	requests  *prometheus.CounterVec
	fallbacks *prometheus.CounterVec
	keysDesc  *prometheus.Desc

	// rules caches each rule's counters, so that Observe does no label
	// hashing: loaded by anyone, stored once per rule.
	rules *xsync.MapOf[string, *ruleCounters]

	mu   sync.Mutex // guards keys
	keys map[string]func() int
}

// Option configures [New].
type Option func(*settings)

type settings struct {
	namespace   string
	constLabels prometheus.Labels
}

// WithNamespace sets the metrics' namespace, the prefix of their names:
// "hotlimit" by default.
func WithNamespace(ns string) Option { return func(s *settings) { s.namespace = ns } }

// WithConstLabels adds labels with fixed values to every metric, such as
// the application's name.
func WithConstLabels(l prometheus.Labels) Option { return func(s *settings) { s.constLabels = l } }

// New returns the metrics, to register with a registry and to give to
// [hotlimit.WithObserver].
func New(opts ...Option) *Metrics {
	s := settings{namespace: "hotlimit"}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: s.namespace, Name: name, Help: help, ConstLabels: s.constLabels,
		}, labels)
	}
	return &Metrics{
		decisions: counter("decisions_total", "Rate-limit decisions, by the rule that decided and outcome.", "rule", "outcome"),
		requests:  counter("requests_total", "Requests decided (a decision on n requests counts n), by rule and outcome.", "rule", "outcome"),
		fallbacks: counter("fallbacks_total", "Decisions a backend could not make, made by its failure policy, by backend and reason.", "backend", "reason"),
		keysDesc: prometheus.NewDesc(prometheus.BuildFQName(s.namespace, "", "keys"),
			"Keys held by a limiter or service.", []string{"limiter"}, s.constLabels),
		rules: xsync.NewMapOf[string, *ruleCounters](),
		keys:  map[string]func() int{},
	}
}

// Observe counts e; see [hotlimit.Observer].
func (m *Metrics) Observe(e hotlimit.Event) {
	rule := e.RuleName()
	rc, ok := m.rules.Load(rule)
	if !ok {
		rc = m.counters(rule)
	}
	o := int(e.Outcome)
	if o <= 0 || o >= outcomes {
		m.observeUnknown(rule, e.N)
		return
	}
	rc.decisions[o].Inc()
	if e.N > 0 {
		rc.requests[o].Add(float64(e.N))
	}
}

// observeUnknown counts a decision whose Outcome names none, a producer's
// bug, under the outcome "unknown": looked up by its labels each time, so
// that no rule exports an "unknown" series until such a decision comes.
func (m *Metrics) observeUnknown(rule string, n int) {
	rule, name := labelValue(rule), hotlimit.Outcome(0).String()
	m.decisions.WithLabelValues(rule, name).Inc()
	if n > 0 {
		m.requests.WithLabelValues(rule, name).Add(float64(n))
	}
}

// counters returns rule's counters, creating them on its first decision.
func (m *Metrics) counters(rule string) *ruleCounters {
	rc, _ := m.rules.LoadOrCompute(rule, func() *ruleCounters {
		rc, rule := &ruleCounters{}, labelValue(rule)
		for o := 1; o < outcomes; o++ {
			name := hotlimit.Outcome(o).String()
			rc.decisions[o] = m.decisions.WithLabelValues(rule, name)
			rc.requests[o] = m.requests.WithLabelValues(rule, name)
		}
		return rc
	})
	return rc
}

// ObserveFallback counts f; see [hotlimit.FallbackObserver].
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	m.fallbacks.WithLabelValues(labelValue(f.Backend), labelValue(f.Reason)).Inc()
}

// labelValue returns s as a label value: Prometheus refuses one that is not
// valid UTF-8 (WithLabelValues panics), so each invalid byte sequence is
// replaced by U+FFFD. It allocates only for an invalid s.
func labelValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// WatchKeys exports keys(), read at each scrape, as hotlimit_keys with the
// label limiter=name: pass a service's or a limiter's Len. A second call
// with the same name replaces the first; a nil keys removes it. keys runs
// inside the scrape and must not call WatchKeys itself.
func (m *Metrics) WatchKeys(name string, keys func() int) {
	name = labelValue(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		delete(m.keys, name)
		return
	}
	m.keys[name] = keys
}

// Describe sends the metrics' descriptions; see [prometheus.Collector].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.decisions.Describe(ch)
	m.requests.Describe(ch)
	m.fallbacks.Describe(ch)
	ch <- m.keysDesc
}

// Collect sends the metrics' values; see [prometheus.Collector].
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.decisions.Collect(ch)
	m.requests.Collect(ch)
	m.fallbacks.Collect(ch)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.keys {
		ch <- prometheus.MustNewConstMetric(m.keysDesc, prometheus.GaugeValue, float64(keys()), name)
	}
}

var (
	_ hotlimit.FallbackObserver = (*Metrics)(nil)
	_ prometheus.Collector      = (*Metrics)(nil)
)
