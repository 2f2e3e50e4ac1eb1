// Package hotlimitotel records hotlimit's decisions with the OpenTelemetry
// metric API.
//
// A [Metrics] is a [hotlimit.BackendObserver]: give it to a service with
// [hotlimit.WithObserver] (or to redislimit, whose limiters report their
// fallbacks to it; a limiter used on its own, from tokenbucket.New and the
// other in-memory constructors, ignores the option and reports no decisions:
// give [Metrics.WatchKeys] its Len):
//
//	m, err := hotlimitotel.New(otel.GetMeterProvider().Meter("hotlimit"))
//	svc, err := service.NewFromRules(rules, hotlimit.WithObserver(m))
//	m.WatchKeys("api", svc.Len)
//
// Instruments, named as the OpenTelemetry semantic conventions name a
// system's own (under its namespace; counters of countable things plural, an
// UpDownCounter singular with .count), with attributes bounded by the
// configuration (never one per request's key or user; see below for the
// names an override gives):
//
//	hotlimit.decisions  Counter        {decision}  hotlimit.rule, hotlimit.outcome (allowed,
//	                                               near_limit, denied, shadow_denied)
//	hotlimit.requests   Counter        {request}   hotlimit.rule, hotlimit.outcome; a Take of n
//	                                               counts n
//	hotlimit.fallbacks  Counter        {fallback}  hotlimit.backend, hotlimit.fallback.reason
//	                                               (timeout, breaker_open, canceled,
//	                                               clock_range, error); one per call a backend
//	                                               could not decide, so a rule of several limits
//	                                               makes several per request (hotlimit.Fallback)
//	hotlimit.key.count  UpDownCounter  {key}       hotlimit.limiter: each function given to
//	                                               WatchKeys
//
// The keys held are an UpDownCounter, not a gauge, because they add up: the
// sum over limiters is the keys the process holds.
//
// A report (a Take of 0, which changes nothing) counts as a decision on no
// requests, allowed or near_limit, and a Take of a negative n (a caller's
// bug) as a denied one: so the share of requests denied reads
// hotlimit.requests, where neither counts.
//
// A rule's four outcomes are reported from its first decision, at 0 until
// they happen, so that a backend that reads no start time (Prometheus'
// rate() and increase() count nothing into a series' first sample) sees
// the first denial; an Event whose Outcome names none (a producer's bug)
// counts as outcome "unknown", reported once it happens. A count stops at
// 2^63−1 rather than wrap around, so that no counter goes down even when
// decisions on math.MaxInt requests (each counting n) add up past it.
//
// A backend's fallbacks are reported, under each reason at 0 until it
// happens, from the building of the first limiter on it that reports to the
// Metrics (see [Metrics.ObserveBackend]): for a service on
// redislimit.Factory, as the service is made, before any request. So an
// alert on increase(hotlimit_fallbacks_total[5m]) > 0 sees the first
// outage, which would otherwise start its series, into whose first sample
// increase() counts nothing. A limiter built at its first use (a TakeWith
// plan's) may fall back at once: where those are a program's only limiters
// on Redis, call m.ObserveBackend(redislimit.Backend) at start. A program whose limiters are all in memory
// reports no fallbacks.
//
// All four are asynchronous (observable) instruments: Observe adds to
// counters of its own, one lock-free map load and two atomic adds, and the
// meter reads them, cumulative, at each collection through one callback.
// A synchronous counter's Add, which looks its attribute set up under the
// SDK's lock, costs several times a decision. The first New on a Meter
// registers the callback; [Metrics.Close] of the last Metrics open on it
// unregisters it, and every Close forgets what its Metrics watches, so
// that a Metrics no longer used no longer keeps the services it watches
// alive through the meter. Observe and ObserveFallback allocate nothing once a rule, or a
// (backend, reason), has been seen.
//
// The OpenTelemetry SDK reports at most 2000 attribute sets per instrument
// by default (its cardinality limit: sdkmetric.WithCardinalityLimit, or a
// reader's WithCardinalityLimitSelector, sets another) and folds the rest
// into one set, otel.metric.overflow=true, which is one of the 2000. With
// the four outcomes of every rule reported, that is 499 rules seen. The rules are reported in
// the order of their first decision, so the same ones keep their own
// attributes at every collection and those seen later count in the
// overflow, whose count never goes down; raise the limit above four times
// the rules, names that are no longer used included, to keep them all.
//
// A reload of the service's rules resets nothing: a rule whose limits
// change counts on under the same attributes, a rule removed or renamed
// keeps its last cumulative value, and hotlimit.key.count, read at each
// collection, drops the keys of a limiter the reload dropped.
//
// Attribute values are the names given to the Metrics (rules, backends,
// reasons, limiters); a name that is not valid UTF-8, which Prometheus and
// OTLP refuse (failing the whole scrape or export), is reported with U+FFFD
// in place of each invalid byte sequence. A rule's name is its path in the
// rules, so an override of a user or of a pair names that user as
// configured (users["alice"], pairs["alice","GET /pay"]): where users are
// API keys or other secrets, the keys given an override of their own are
// exported with every collection. Make the service's user a name that is
// not a secret (the account an API key belongs to, resolved before the
// limiter).
//
// Several services may share one Metrics: their rules are counted by name,
// so two services' "default" rules add up, and each needs a limiter name of
// its own in WatchKeys. To tell them apart, give each a Metrics on a Meter
// of its own name (its instrumentation scope). Two Metrics on one Meter
// count into the same counts, reported by one callback, as one Metrics
// shared by both would: closing one takes nothing out of them, so no
// counter goes down. Once the last Metrics on a Meter has closed, a new one
// on it counts from zero, which a reader takes for a reset (a delta reader
// that has not collected in between, for a negative difference): keep a
// Metrics open for as long as its Meter reports. Metrics on different
// Meters of one provider are different scopes, kept apart by the SDK.
//
// Meters are told apart by their Go value, not by their scope: the global
// provider's otel.GetMeterProvider().Meter("hotlimit") taken before
// otel.SetMeterProvider is another value than the one taken after, though
// both report into the same scope. Metrics on the two count apart, the SDK
// reports the sum, and closing one takes its counts out of that sum, which
// goes down. Make every Metrics of a scope on one Meter value, or make them
// after otel.SetMeterProvider. A Meter whose Go value is not comparable (a
// struct of your own that holds a slice, a map or a func beside the Meter
// it wraps) equals no other, not even itself: every Metrics on it counts
// apart, as on Meters of different values, and closing one takes its counts
// out of the sum. Pass such a wrapper by pointer, the same pointer to
// every New, for its Metrics to share their counts.
package hotlimitotel

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/puzpuzpuz/xsync/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/internal/satcount"
)

const outcomes = int(hotlimit.OutcomeShadowDenied) + 1

// The instruments' and attributes' names.
const (
	decisionsName = "hotlimit.decisions"
	requestsName  = "hotlimit.requests"
	fallbacksName = "hotlimit.fallbacks"
	keysName      = "hotlimit.key.count"

	ruleKey    = attribute.Key("hotlimit.rule")
	outcomeKey = attribute.Key("hotlimit.outcome")
	backendKey = attribute.Key("hotlimit.backend")
	reasonKey  = attribute.Key("hotlimit.fallback.reason")
	limiterKey = attribute.Key("hotlimit.limiter")
)

// ruleCounters counts a rule's decisions and requests by outcome (the zero
// Outcome for those that name none), with the attributes each is reported
// under, built once per rule.
type ruleCounters struct {
	decisions, requests [outcomes]satcount.Count
	attrs               [outcomes][]metric.ObserveOption
}

// fallbackKey names the attribute set of a fallback.
type fallbackKey struct{ backend, reason string }

// fallbackCounter counts the fallbacks of one (backend, reason).
type fallbackCounter struct {
	n     atomic.Int64
	attrs []metric.ObserveOption
}

// Metrics records decisions and fallbacks; see the package documentation.
// It is safe for concurrent use. The zero value is not usable; call [New]:
// it has no meter to record into, so it records nothing, and says so with
// an error from [Metrics.CheckObserver], which service.NewFromRules and
// redislimit.New return when given it (see [hotlimit.CheckObserver]), and
// from its Close. A nil *Metrics, which New returns with its error and which a program that
// turns its metrics off may hand to [hotlimit.WithObserver], records
// nothing: its methods do nothing, as that option documents for a nil
// observer.
type Metrics struct {
	m *meterCounts

	// closed and watched are guarded by m.mu.
	closed  bool
	watched map[string]func() int
}

// made reports whether m was made by [New]: false for a nil or zero-value
// Metrics, which record nothing.
func (m *Metrics) made() bool { return m != nil && m.m != nil }

// errNotMade is the error of a zero-value Metrics.
var errNotMade = errors.New("hotlimitotel: Metrics is a zero value, which records nothing: make it with hotlimitotel.New")

// CheckObserver returns an error saying to call [New] for a zero-value
// Metrics, which records nothing, and nil for one made by New or a nil
// *Metrics (which records nothing by choice, as [hotlimit.WithObserver]
// documents). [hotlimit.CheckObserver] asks it.
func (m *Metrics) CheckObserver() error {
	if m != nil && m.m == nil {
		return errNotMade
	}
	return nil
}

// meterCounts is what every open Metrics on one meter shares: the
// instruments, their one callback, and the counts it reports. Counting in
// one place is what keeps each counter monotonic: had each Metrics its own
// counts, closing one would take what it counted out of the sums the others
// report, and the counters would go down.
type meterCounts struct {
	decisions metric.Int64ObservableCounter
	requests  metric.Int64ObservableCounter
	fallbacks metric.Int64ObservableCounter
	keys      metric.Int64ObservableUpDownCounter

	// rules and fallbackCounts hold the counts of each rule and of each
	// (backend, reason): loaded by anyone, stored once per key, and
	// counted by atomic adds; the callback reads them.
	rules          *xsync.MapOf[string, *ruleCounters]
	fallbackCounts *xsync.MapOf[fallbackKey, *fallbackCounter]
	// order holds the same counters as rules, in the order of each rule's
	// first decision, the order the callback reports them in: so that
	// past the SDK's cardinality limit the same rules keep their own
	// attributes at every collection, and the same ones count in the
	// overflow. Appended to under orderMu by counters, once per rule;
	// never changed otherwise, so the callback reads a copy of the slice.
	orderMu sync.Mutex
	order   []*ruleCounters

	// refs (the open Metrics) and registration are guarded by metersMu.
	// The callback never takes it: the SDK runs the callback holding a
	// lock of its own, which Unregister takes.
	refs         int
	registration metric.Registration

	mu      sync.Mutex // guards open's keys and each one's watched; taken by the callback
	open    map[*Metrics]struct{}
	meterID any // the key in meters, nil for a meter that cannot be one
}

// meters holds the counts of each meter that has an open Metrics, so that a
// second Metrics on it counts into the same ones; an entry goes when the
// last Metrics on its meter closes. Lock order: metersMu, then the SDK's
// lock (Unregister), then meterCounts.mu.
var (
	metersMu sync.Mutex
	meters   = map[any]*meterCounts{}
)

// New returns a Metrics recording into instruments on meter. The first
// Metrics on a meter creates the instruments and registers the callback
// that reports them; every other Metrics open on the same meter counts into
// the same counts. The package keeps each meter with an open Metrics, so
// that the next New on it finds its counts: close every Metrics on a meter
// before dropping its provider, or the provider stays reachable. Meters are
// the same when their Go values are equal: a meter whose value is not
// comparable is the same as none, and a Metrics on it counts apart (see
// the package documentation). A nil meter, or one holding a nil pointer or
// function, is an error.
func New(meter metric.Meter) (*Metrics, error) {
	if nilness.Is(meter) {
		return nil, errors.New("hotlimitotel: meter is nil: pass one from a MeterProvider, such as otel.GetMeterProvider().Meter(\"hotlimit\")")
	}
	metersMu.Lock()
	defer metersMu.Unlock()
	var id any
	if reflect.ValueOf(meter).Comparable() {
		id = meter
	}
	mc := meters[id]
	if id == nil || mc == nil {
		var err error
		if mc, err = newMeterCounts(meter); err != nil {
			return nil, err
		}
		mc.meterID = id
		if id != nil {
			meters[id] = mc
		}
	}
	mc.refs++
	m := &Metrics{m: mc, watched: map[string]func() int{}}
	mc.mu.Lock()
	mc.open[m] = struct{}{}
	mc.mu.Unlock()
	return m, nil
}

// newMeterCounts creates the instruments on meter and registers their
// callback.
func newMeterCounts(meter metric.Meter) (*meterCounts, error) {
	m := &meterCounts{rules: xsync.NewMapOf[string, *ruleCounters](),
		fallbackCounts: xsync.NewMapOf[fallbackKey, *fallbackCounter](), open: map[*Metrics]struct{}{}}
	var err error
	if m.decisions, err = meter.Int64ObservableCounter(decisionsName, metric.WithUnit("{decision}"),
		metric.WithDescription("Number of rate-limit decisions, by the rule that decided and their outcome.")); err != nil {
		return nil, err
	}
	if m.requests, err = meter.Int64ObservableCounter(requestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests decided (a decision on n requests counts n), by the rule that decided and their outcome.")); err != nil {
		return nil, err
	}
	if m.fallbacks, err = meter.Int64ObservableCounter(fallbacksName, metric.WithUnit("{fallback}"),
		metric.WithDescription("Number of decisions a backend could not make, made by its failure policy instead, by backend and reason.")); err != nil {
		return nil, err
	}
	if m.keys, err = meter.Int64ObservableUpDownCounter(keysName, metric.WithUnit("{key}"),
		metric.WithDescription("Number of keys held by a limiter or service.")); err != nil {
		return nil, err
	}
	if m.registration, err = meter.RegisterCallback(m.observe, m.decisions, m.requests, m.fallbacks, m.keys); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe counts e; see [hotlimit.Observer].
func (m *Metrics) Observe(e hotlimit.Event) {
	if !m.made() {
		return
	}
	rule := e.RuleName()
	rc, ok := m.m.rules.Load(rule)
	if !ok {
		rc = m.m.counters(rule)
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

// counters returns rule's counters, building them on its first decision.
func (m *meterCounts) counters(rule string) *ruleCounters {
	rc, _ := m.rules.LoadOrCompute(rule, func() *ruleCounters {
		rc := &ruleCounters{}
		for o := range outcomes {
			rc.attrs[o] = []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(
				ruleKey.String(attrValue(rule)), outcomeKey.String(hotlimit.Outcome(o).String())))}
		}
		// Called once per rule, as it is stored: rc joins order once.
		m.orderMu.Lock()
		m.order = append(m.order, rc)
		m.orderMu.Unlock()
		return rc
	})
	return rc
}

// ObserveFallback counts f; see [hotlimit.FallbackObserver]. While a
// backend is down every decision falls back, so this is a hot path too.
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	if !m.made() {
		return
	}
	k := fallbackKey{f.Backend, f.Reason}
	fc, ok := m.m.fallbackCounts.Load(k)
	if !ok {
		fc = m.m.fallbackCounter(k)
	}
	fc.n.Add(1)
}

// ObserveBackend reports the fallbacks of backend, under each reason of
// [hotlimit.FallbackReasons], at 0 until they happen; see
// [hotlimit.BackendObserver]. A limiter on Redis calls it as it is built.
func (m *Metrics) ObserveBackend(backend string) {
	if !m.made() {
		return
	}
	for _, r := range hotlimit.FallbackReasons() {
		m.m.fallbackCounter(fallbackKey{backend, r})
	}
}

// fallbackCounter returns the counter of k, creating it at 0 the first time.
func (m *meterCounts) fallbackCounter(k fallbackKey) *fallbackCounter {
	fc, _ := m.fallbackCounts.LoadOrCompute(k, func() *fallbackCounter {
		return &fallbackCounter{attrs: []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(
			backendKey.String(attrValue(k.backend)), reasonKey.String(attrValue(k.reason))))}}
	})
	return fc
}

// attrValue returns s as an attribute value: Prometheus refuses a label
// value that is not valid UTF-8, failing the whole scrape, and OTLP's
// protobuf a string that is not, failing the whole export; so each invalid
// byte sequence is replaced by U+FFFD. It allocates only for an invalid s.
func attrValue(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// WatchKeys reports keys(), read at each collection, as hotlimit.key.count
// with the attribute hotlimit.limiter=name: pass a service's or a limiter's
// Len. A second call with the same name replaces the first; a nil keys
// removes it. After [Metrics.Close] it does nothing. keys runs inside the
// collection and must not call WatchKeys or Close itself.
func (m *Metrics) WatchKeys(name string, keys func() int) {
	if !m.made() {
		return
	}
	name = attrValue(name)
	m.m.mu.Lock()
	defer m.m.mu.Unlock()
	if m.closed {
		return
	}
	if keys == nil {
		delete(m.watched, name)
		return
	}
	m.watched[name] = keys
}

// Close forgets the functions given to WatchKeys, so that m keeps nothing
// watched alive, and, if m is the last Metrics open on its meter,
// unregisters the instruments' callback: the meter reads nothing from the
// package any more. What m counted stays in the counts of the other
// Metrics open on the meter, so no counter goes down. Observe still counts,
// read only while another Metrics is open on the meter. Closing twice does
// nothing. Closing a zero-value Metrics, not made by New, is an error.
func (m *Metrics) Close() error {
	if m == nil {
		return nil
	}
	if m.m == nil {
		return errNotMade
	}
	metersMu.Lock()
	defer metersMu.Unlock()
	mc := m.m
	mc.mu.Lock()
	if m.closed {
		mc.mu.Unlock()
		return nil
	}
	m.closed = true
	clear(m.watched)
	delete(mc.open, m)
	mc.mu.Unlock()
	if mc.refs--; mc.refs > 0 {
		return nil
	}
	if mc.meterID != nil {
		delete(meters, mc.meterID)
	}
	return mc.registration.Unregister()
}

// observe is the instruments' callback: it reports the counts of the four
// outcomes of every rule seen so far, at 0 until they happen, those of the
// unknown outcome once it has happened, and the keys of each function
// watched by each open Metrics.
//
// The rules' outcomes are reported in the order of the rules' first
// decisions, then the unknown ones: the SDK keeps the first attribute sets
// it is given at each collection, up to its cardinality limit, and folds
// the rest into its overflow set, so that order keeps the same rules under
// their own attributes from one collection to the next (a rule seen later,
// or an unknown outcome, never pushes one out), and the overflow's count
// never goes down.
func (m *meterCounts) observe(_ context.Context, o metric.Observer) error {
	m.orderMu.Lock()
	order := m.order
	m.orderMu.Unlock()
	for _, rc := range order {
		for i := 1; i < outcomes; i++ {
			o.ObserveInt64(m.decisions, rc.decisions[i].Load(), rc.attrs[i]...)
			o.ObserveInt64(m.requests, rc.requests[i].Load(), rc.attrs[i]...)
		}
	}
	for _, rc := range order {
		if d := rc.decisions[0].Load(); d != 0 {
			o.ObserveInt64(m.decisions, d, rc.attrs[0]...)
			o.ObserveInt64(m.requests, rc.requests[0].Load(), rc.attrs[0]...)
		}
	}
	m.fallbackCounts.Range(func(_ fallbackKey, fc *fallbackCounter) bool {
		o.ObserveInt64(m.fallbacks, fc.n.Load(), fc.attrs...)
		return true
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	for w := range m.open {
		for name, keys := range w.watched {
			o.ObserveInt64(m.keys, int64(keys()), metric.WithAttributeSet(attribute.NewSet(limiterKey.String(name))))
		}
	}
	return nil
}

var _ hotlimit.BackendObserver = (*Metrics)(nil)
