// Package hotlimitprom exports hotlimit's decisions as Prometheus metrics.
//
// A [Metrics] is a [hotlimit.BackendObserver]: give it to a service with
// [hotlimit.WithObserver] (or to redislimit, whose limiters report their
// fallbacks to it; a limiter used on its own, from tokenbucket.New and the
// other in-memory constructors, ignores the option and reports no decisions:
// give [Metrics.WatchKeys] its Len), and register it with a Prometheus
// registry:
//
//	m := hotlimitprom.New()
//	prometheus.MustRegister(m)
//	svc, err := service.NewFromRules(rules, hotlimit.WithObserver(m))
//	m.WatchKeys("api", svc.Len)
//
// It exports, with labels bounded by the configuration (never a label per
// request's key or user; see below for the names an override gives):
//
//	hotlimit_decisions_total{rule, outcome}  counter  decisions, by the rule that decided and
//	                                                  outcome: allowed, near_limit, denied, shadow_denied
//	hotlimit_requests_total{rule, outcome}   counter  requests (a Take of n counts n)
//	hotlimit_fallbacks_total{backend, reason} counter calls a backend (Redis) could not decide,
//	                                                  by reason: timeout, breaker_open, canceled,
//	                                                  clock_range, error (a rule of several limits
//	                                                  makes several per request; see hotlimit.Fallback)
//	hotlimit_keys{limiter}                   gauge    keys held, per function given to WatchKeys
//
// A report (a Take of 0, which changes nothing) counts as a decision on no
// requests, allowed or near_limit, and a Take of a negative n (a caller's
// bug) as a denied one: so the share of requests denied reads
// hotlimit_requests_total, where neither counts.
//
// A rule's four outcomes are exported from its first decision, at 0 until
// they happen, so that rate() sees them start; an Event whose Outcome names
// none (a producer's bug) counts as outcome "unknown". A count stops at
// 2^63−1 rather than wrap around, so that no counter goes down even when
// decisions on math.MaxInt requests (each counting n) add up past it.
//
// A backend's fallbacks are exported, one series per reason at 0 until it
// happens, from the building of the first limiter on it that reports to the
// Metrics (see [Metrics.ObserveBackend]): for a service on
// redislimit.Factory, as the service is made, before any request. So an
// alert on increase(hotlimit_fallbacks_total[5m]) > 0 sees the first
// outage, which would otherwise start its series, into whose first sample
// increase() counts nothing. A limiter built at its first use (a TakeWith
// plan's) may fall back at once: where those are a program's only limiters
// on Redis, call m.ObserveBackend(redislimit.Backend) at start. A program whose limiters are all in memory
// exports no fallback series.
//
// A reload of a service's rules (its Replace or WatchFile)
// resets nothing: a rule whose limits change counts on in the same series,
// and the series of a rule removed or renamed stay at their last value for
// the life of the Metrics, so that no live counter ever goes down. The rule
// names seen since the start bound the series: eight per name (the four
// outcomes of both counters), kept in memory and sent at every scrape. Where
// rules are renamed or replaced by others often (generated names, a rule per
// tenant), the series of the names gone leave only with their Metrics:
// unregister it, and register a new one given to the service built in its
// place (the observer is an option of service.New), or restart the process;
// the new series start from zero, which rate() and increase() read as a
// counter reset. hotlimit_keys is read at each
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
// A rule's name is its path in the rules, so an override of a user or of a
// pair names that user as configured (users["alice"],
// pairs["alice","GET /pay"]): where users are API keys or other secrets,
// the keys given an override of their own appear in every scrape. Make the
// service's user a name that is not a secret (the account an API key
// belongs to, resolved before the limiter), or keep the scrape private.
//
// Observe costs one lock-free map load and two atomic adds, and allocates
// nothing once a rule has been seen.
package hotlimitprom

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/puzpuzpuz/xsync/v3"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/satcount"
)

// outcomes is the number of hotlimit.Outcome values, the zero one included.
const outcomes = int(hotlimit.OutcomeShadowDenied) + 1

// ruleCounters counts a rule's decisions and requests by outcome, the zero
// Outcome for those that name none; label is the rule's label value, and
// created the time of its first decision, the counters' created timestamp.
type ruleCounters struct {
	label               string
	created             time.Time
	decisions, requests [outcomes]satcount.Count
}

// Metrics counts decisions and fallbacks; see the package documentation. It
// is safe for concurrent use. The zero value is not usable; call [New]: a
// registry refuses it with an error that says so, and it counts nothing;
// [Metrics.CheckObserver] returns that error too, so that
// service.NewFromRules and redislimit.New refuse it as an observer (see
// [hotlimit.CheckObserver]). A
// nil *Metrics, which a program that turns its metrics off may hand to
// [hotlimit.WithObserver], counts nothing and exports nothing: its methods
// do nothing, as that option documents for a nil observer.
type Metrics struct {
	decisionsDesc *prometheus.Desc
	requestsDesc  *prometheus.Desc
	fallbacks     *prometheus.CounterVec
	keysDesc      *prometheus.Desc

	// rules caches each rule's counters, so that Observe does no label
	// hashing: loaded by anyone, stored once per rule. labels holds the
	// same counters by label value, which Collect reads: two rule names
	// that differ only in bytes that are not valid UTF-8 count into one.
	rules  *xsync.MapOf[string, *ruleCounters]
	labels *xsync.MapOf[string, *ruleCounters]

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
// [hotlimit.WithObserver]. A namespace or constant labels that Prometheus
// refuses (a namespace that makes no valid metric name, an empty or
// invalid label name, a value that is not UTF-8) make a registry refuse
// the Metrics at Register with Prometheus's error, and make Collect send
// invalid metrics that carry it: nothing panics.
func New(opts ...Option) *Metrics {
	s := settings{namespace: "hotlimit"}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(s.namespace, "", name), help, labels, s.constLabels)
	}
	return &Metrics{
		decisionsDesc: desc("decisions_total", "Rate-limit decisions, by the rule that decided and outcome.", "rule", "outcome"),
		requestsDesc:  desc("requests_total", "Requests decided (a decision on n requests counts n), by rule and outcome.", "rule", "outcome"),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: s.namespace, Name: "fallbacks_total", ConstLabels: s.constLabels,
			Help: "Decisions a backend could not make, made by its failure policy, by backend and reason.",
		}, []string{"backend", "reason"}),
		keysDesc: desc("keys", "Keys held by a limiter or service.", "limiter"),
		rules:    xsync.NewMapOf[string, *ruleCounters](),
		labels:   xsync.NewMapOf[string, *ruleCounters](),
		keys:     map[string]func() int{},
	}
}

// notMade is the description a zero-value Metrics sends, which a registry
// refuses: its help says why, and its empty name makes it invalid. It is
// made by prometheus.NewDesc, not NewInvalidDesc, whose description has no
// label names: a Registerer of WrapRegistererWith or
// WrapRegistererWithPrefix rebuilds every description from those, and
// crashed in the registry's goroutine on such a one.
var notMade = prometheus.NewDesc("", notMadeText, nil, nil)

// notMadeText says why a zero-value Metrics is refused, by a registry (see
// notMade) or as an observer (errNotMade).
const notMadeText = "hotlimitprom: Metrics is a zero value: make it with hotlimitprom.New"

// errNotMade is [Metrics.CheckObserver]'s error for a zero-value Metrics.
var errNotMade = errors.New(notMadeText)

// made reports whether m was made by [New]: false for a nil or zero-value
// Metrics, which count and export nothing.
func (m *Metrics) made() bool { return m != nil && m.rules != nil }

// CheckObserver returns an error saying to call [New] for a zero-value
// Metrics, which counts nothing, and nil for one made by New or a nil
// *Metrics (which counts nothing by choice, as [hotlimit.WithObserver]
// documents). [hotlimit.CheckObserver] asks it.
func (m *Metrics) CheckObserver() error {
	if m != nil && !m.made() {
		return errNotMade
	}
	return nil
}

// Observe counts e; see [hotlimit.Observer].
func (m *Metrics) Observe(e hotlimit.Event) {
	if !m.made() {
		return
	}
	rule := e.RuleName()
	rc, ok := m.rules.Load(rule)
	if !ok {
		rc = m.counters(rule)
	}
	o := int(e.Outcome)
	if o >= outcomes {
		o = 0
	}
	rc.decisions[o].Add(1)
	if e.N > 0 {
		rc.requests[o].Add(e.N)
	}
}

// counters returns rule's counters, creating them on its first decision:
// those of its label value, shared with any other rule name of that label.
func (m *Metrics) counters(rule string) *ruleCounters {
	rc, _ := m.rules.LoadOrCompute(rule, func() *ruleCounters {
		label := labelValue(rule)
		rc, _ := m.labels.LoadOrCompute(label, func() *ruleCounters { return &ruleCounters{label: label, created: time.Now()} })
		return rc
	})
	return rc
}

// ObserveFallback counts f; see [hotlimit.FallbackObserver].
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	if !m.made() {
		return
	}
	m.fallbacks.WithLabelValues(labelValue(f.Backend), labelValue(f.Reason)).Inc()
}

// ObserveBackend exports the fallbacks of backend, one series per reason
// of [hotlimit.FallbackReasons], at 0 until they happen; see
// [hotlimit.BackendObserver]. A limiter on Redis calls it as it is built.
func (m *Metrics) ObserveBackend(backend string) {
	if !m.made() {
		return
	}
	backend = labelValue(backend)
	for _, r := range hotlimit.FallbackReasons() {
		m.fallbacks.WithLabelValues(backend, r)
	}
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
	if !m.made() {
		return
	}
	name = labelValue(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		delete(m.keys, name)
		return
	}
	m.keys[name] = keys
}

// Describe sends the metrics' descriptions; see [prometheus.Collector]. Of
// a zero-value Metrics it sends one invalid description, so that a
// registry refuses it with an error saying to call [New].
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	if m == nil {
		return
	}
	if !m.made() {
		ch <- notMade
		return
	}
	ch <- m.decisionsDesc
	ch <- m.requestsDesc
	m.fallbacks.Describe(ch)
	ch <- m.keysDesc
}

// Collect sends the metrics' values; see [prometheus.Collector]: the four
// outcomes of every rule seen so far, at 0 until they happen, and the
// unknown one once it has happened.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	if !m.made() {
		return
	}
	m.labels.Range(func(_ string, rc *ruleCounters) bool {
		for o := range outcomes {
			d := rc.decisions[o].Load()
			if o == 0 && d == 0 {
				continue
			}
			name, r := hotlimit.Outcome(o).String(), rc.requests[o].Load()
			dm, err := prometheus.NewConstMetricWithCreatedTimestamp(m.decisionsDesc, prometheus.CounterValue, float64(d), rc.created, rc.label, name)
			ch <- orInvalid(m.decisionsDesc, dm, err)
			rm, err := prometheus.NewConstMetricWithCreatedTimestamp(m.requestsDesc, prometheus.CounterValue, float64(r), rc.created, rc.label, name)
			ch <- orInvalid(m.requestsDesc, rm, err)
		}
		return true
	})
	m.fallbacks.Collect(ch)
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.keys {
		km, err := prometheus.NewConstMetric(m.keysDesc, prometheus.GaugeValue, float64(keys()), name)
		ch <- orInvalid(m.keysDesc, km, err)
	}
}

// orInvalid returns metric, made of desc by prometheus.NewConstMetric or
// its kin, or, when that failed with err, an invalid metric of desc that
// carries err, so that Collect never panics: the label values are valid (see
// labelValue), but desc itself is invalid when [WithNamespace] or
// [WithConstLabels] gave names Prometheus refuses. A registry refuses such
// a Metrics at Register; one that collects it all the same (an unchecked
// collector wrapping it, one that sends no description) reports the error
// at Gather, where a panic in Collect would crash the registry's goroutine.
func orInvalid(desc *prometheus.Desc, metric prometheus.Metric, err error) prometheus.Metric {
	if err != nil {
		return prometheus.NewInvalidMetric(desc, err)
	}
	return metric
}

var (
	_ hotlimit.BackendObserver = (*Metrics)(nil)
	_ prometheus.Collector     = (*Metrics)(nil)
)
