// Package hotlimitotel records hotlimit's decisions with the OpenTelemetry
// metric API.
//
// A [Metrics] is a [hotlimit.FallbackObserver]: give it to a service (or any
// limiter that reports to an observer) with [hotlimit.WithObserver]:
//
//	m, err := hotlimitotel.New(otel.GetMeterProvider().Meter("hotlimit"))
//	svc, err := service.NewFromRules(rules, hotlimit.WithObserver(m))
//	m.WatchKeys("api", svc.Len)
//
// Instruments, named as the OpenTelemetry semantic conventions name a
// system's own (under its namespace; counters of countable things plural, an
// UpDownCounter singular with .count), with attributes bounded by the
// configuration (never one per key or per user):
//
//	hotlimit.decisions  Counter                  {decision}  hotlimit.rule, hotlimit.outcome (allowed,
//	                                                         near_limit, denied, shadow_denied)
//	hotlimit.requests   Counter                  {request}   hotlimit.rule, hotlimit.outcome; a Take of n
//	                                                         counts n
//	hotlimit.fallbacks  Counter                  {fallback}  hotlimit.backend, hotlimit.fallback.reason
//	                                                         (timeout, breaker_open, canceled,
//	                                                         clock_range, error)
//	hotlimit.key.count  asynchronous UpDownCounter {key}     hotlimit.limiter: each function given to
//	                                                         WatchKeys
//
// The keys held are an UpDownCounter, not a gauge, because they add up: the
// sum over limiters is the keys the process holds. Its callback is
// registered while some function is watched, and unregistered when the last
// is removed or the Metrics closed (see [Metrics.Close]), so that a Metrics
// no longer used does not keep a service alive through its meter.
//
// A reload of the service's rules resets nothing: a rule whose limits
// change counts on under the same attributes, a rule removed or renamed
// keeps its last cumulative value, and hotlimit.key.count, read at each
// collection, drops the keys of a limiter the reload dropped.
//
// Several services may share one Metrics: their rules are counted by name,
// so two services' "default" rules add up, and each needs a limiter name of
// its own in WatchKeys. To tell them apart, give each a Metrics on a Meter
// of its own name (its instrumentation scope). Two Metrics on one Meter
// record into the same instruments; for a limiter name both watch, one
// reading of hotlimit.key.count is kept and the other lost.
//
// Observe costs one lock-free map load and two counter adds with
// precomputed attribute sets, and allocates nothing once a rule has been
// seen; ObserveFallback likewise once a (backend, reason) has been seen.
package hotlimitotel

import (
	"context"
	"errors"
	"sync"

	"github.com/puzpuzpuz/xsync/v3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/hotlimit/hotlimit"
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

// ruleOptions holds, per outcome, the attribute options of a rule's
// measurements, built once per rule: passed as a slice, they are not
// copied into a new one at each Add.
type ruleOptions [outcomes][]metric.AddOption

// fallbackKey names the attribute set of a fallback.
type fallbackKey struct{ backend, reason string }

// Metrics records decisions and fallbacks; see the package documentation.
// It is safe for concurrent use. The zero value is not usable; call [New].
type Metrics struct {
	decisions metric.Int64Counter
	requests  metric.Int64Counter
	fallbacks metric.Int64Counter
	keys      metric.Int64ObservableUpDownCounter
	meter     metric.Meter

	// rules and fallbackOpts cache the attribute options of each rule and
	// of each (backend, reason): loaded by anyone, stored once per key.
	rules        *xsync.MapOf[string, *ruleOptions]
	fallbackOpts *xsync.MapOf[fallbackKey, []metric.AddOption]

	// regMu serialises changes of registration; it is never taken by the
	// callback, which the SDK runs holding its own lock, so that
	// registering (which takes that lock) while holding regMu cannot
	// deadlock with a collection.
	regMu        sync.Mutex
	registration metric.Registration // nil while nothing is watched
	closed       bool

	mu      sync.Mutex // guards watched; taken by the callback
	watched map[string]func() int
}

// New creates the instruments on meter. A nil meter is an error.
func New(meter metric.Meter) (*Metrics, error) {
	if meter == nil {
		return nil, errors.New("hotlimitotel: meter is nil: pass one from a MeterProvider, such as otel.GetMeterProvider().Meter(\"hotlimit\")")
	}
	m := &Metrics{meter: meter, rules: xsync.NewMapOf[string, *ruleOptions](),
		fallbackOpts: xsync.NewMapOf[fallbackKey, []metric.AddOption](), watched: map[string]func() int{}}
	var err error
	if m.decisions, err = meter.Int64Counter(decisionsName, metric.WithUnit("{decision}"),
		metric.WithDescription("Number of rate-limit decisions, by the rule that decided and their outcome.")); err != nil {
		return nil, err
	}
	if m.requests, err = meter.Int64Counter(requestsName, metric.WithUnit("{request}"),
		metric.WithDescription("Number of requests decided (a decision on n requests counts n), by the rule that decided and their outcome.")); err != nil {
		return nil, err
	}
	if m.fallbacks, err = meter.Int64Counter(fallbacksName, metric.WithUnit("{fallback}"),
		metric.WithDescription("Number of decisions a backend could not make, made by its failure policy instead, by backend and reason.")); err != nil {
		return nil, err
	}
	if m.keys, err = meter.Int64ObservableUpDownCounter(keysName, metric.WithUnit("{key}"),
		metric.WithDescription("Number of keys held by a limiter or service.")); err != nil {
		return nil, err
	}
	return m, nil
}

// Observe records e; see [hotlimit.Observer].
func (m *Metrics) Observe(e hotlimit.Event) {
	rule := e.RuleName()
	ro, ok := m.rules.Load(rule)
	if !ok {
		ro = m.options(rule)
	}
	o := int(e.Outcome)
	if o >= outcomes {
		o = 0
	}
	ctx := context.Background()
	m.decisions.Add(ctx, 1, ro[o]...)
	if e.N > 0 {
		m.requests.Add(ctx, int64(e.N), ro[o]...)
	}
}

// options returns rule's attribute options, building them on its first
// decision.
func (m *Metrics) options(rule string) *ruleOptions {
	ro, _ := m.rules.LoadOrCompute(rule, func() *ruleOptions {
		ro := &ruleOptions{}
		for o := range outcomes {
			ro[o] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				ruleKey.String(rule), outcomeKey.String(hotlimit.Outcome(o).String())))}
		}
		return ro
	})
	return ro
}

// ObserveFallback records f; see [hotlimit.FallbackObserver]. While a
// backend is down every decision falls back, so this is a hot path too: the
// attribute options of each (backend, reason), a small set, are built once.
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	k := fallbackKey{f.Backend, f.Reason}
	opts, ok := m.fallbackOpts.Load(k)
	if !ok {
		opts, _ = m.fallbackOpts.LoadOrCompute(k, func() []metric.AddOption {
			return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(
				backendKey.String(f.Backend), reasonKey.String(f.Reason)))}
		})
	}
	m.fallbacks.Add(context.Background(), 1, opts...)
}

// WatchKeys reports keys(), read at each collection, as hotlimit.key.count
// with the attribute hotlimit.limiter=name: pass a service's or a limiter's
// Len. A second call with the same name replaces the first; a nil keys
// removes it. The instrument's callback is registered with the first
// function watched and unregistered when the last is removed; after
// [Metrics.Close], WatchKeys does nothing. It returns the meter's error
// registering the callback, if any.
func (m *Metrics) WatchKeys(name string, keys func() int) error {
	m.regMu.Lock()
	defer m.regMu.Unlock()
	if m.closed {
		return nil
	}
	m.mu.Lock()
	if keys == nil {
		delete(m.watched, name)
	} else {
		m.watched[name] = keys
	}
	watching := len(m.watched) > 0
	m.mu.Unlock()
	switch {
	case watching && m.registration == nil:
		reg, err := m.meter.RegisterCallback(m.observeKeys, m.keys)
		if err != nil {
			m.mu.Lock()
			delete(m.watched, name)
			m.mu.Unlock()
			return err
		}
		m.registration = reg
	case !watching && m.registration != nil:
		err := m.registration.Unregister()
		m.registration = nil
		return err
	}
	return nil
}

// Close unregisters the callback of hotlimit.key.count and forgets the
// functions given to WatchKeys, so that the meter no longer reads them (nor
// keeps what they refer to alive); the counters keep recording. Closing
// twice does nothing.
func (m *Metrics) Close() error {
	m.regMu.Lock()
	defer m.regMu.Unlock()
	m.closed = true
	m.mu.Lock()
	clear(m.watched)
	m.mu.Unlock()
	if m.registration == nil {
		return nil
	}
	err := m.registration.Unregister()
	m.registration = nil
	return err
}

// observeKeys is the callback of hotlimit.key.count.
func (m *Metrics) observeKeys(_ context.Context, o metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.watched {
		o.ObserveInt64(m.keys, int64(keys()), metric.WithAttributeSet(attribute.NewSet(limiterKey.String(name))))
	}
	return nil
}

var _ hotlimit.FallbackObserver = (*Metrics)(nil)
