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
// Instruments, with attributes bounded by the configuration (never one per
// key or per user):
//
//	hotlimit.decisions  counter        {decision}  attributes rule, outcome (allowed, near_limit,
//	                                               denied, shadow_denied)
//	hotlimit.requests   counter        {request}   rule, outcome; a Take of n counts n
//	hotlimit.fallbacks  counter        {decision}  backend, reason (timeout, breaker_open,
//	                                               canceled, clock_range, error)
//	hotlimit.keys       gauge (async)  {key}       limiter: each function given to WatchKeys
//
// Several services may share one Metrics: their rules are counted by name,
// so two services' "default" rules add up, and each needs a limiter name of
// its own in WatchKeys. To tell them apart, give each a Metrics on a Meter
// of its own name (its instrumentation scope). Two Metrics on one Meter
// record into the same instruments; for a limiter name both watch, one
// reading of hotlimit.keys is kept and the other lost.
//
// Observe costs one lock-free map load and two counter adds with
// precomputed attribute sets.
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

// ruleOptions holds, per outcome, the attribute options of a rule's
// measurements, built once per rule: passed as a slice, they are not
// copied into a new one at each Add.
type ruleOptions [outcomes][]metric.AddOption

// Metrics records decisions and fallbacks; see the package documentation.
// It is safe for concurrent use. The zero value is not usable; call [New].
type Metrics struct {
	decisions metric.Int64Counter
	requests  metric.Int64Counter
	fallbacks metric.Int64Counter
	keys      metric.Int64ObservableGauge
	meter     metric.Meter

	rules *xsync.MapOf[string, *ruleOptions]

	mu      sync.Mutex // guards watched
	watched map[string]func() int
}

// New creates the instruments on meter. A nil meter is an error.
func New(meter metric.Meter) (*Metrics, error) {
	if meter == nil {
		return nil, errors.New("hotlimitotel: meter is nil: pass one from a MeterProvider, such as otel.GetMeterProvider().Meter(\"hotlimit\")")
	}
	m := &Metrics{meter: meter, rules: xsync.NewMapOf[string, *ruleOptions](), watched: map[string]func() int{}}
	var err error
	if m.decisions, err = meter.Int64Counter("hotlimit.decisions", metric.WithUnit("{decision}"),
		metric.WithDescription("Rate-limit decisions, by the rule that decided and outcome.")); err != nil {
		return nil, err
	}
	if m.requests, err = meter.Int64Counter("hotlimit.requests", metric.WithUnit("{request}"),
		metric.WithDescription("Requests decided (a decision on n requests counts n), by rule and outcome.")); err != nil {
		return nil, err
	}
	if m.fallbacks, err = meter.Int64Counter("hotlimit.fallbacks", metric.WithUnit("{decision}"),
		metric.WithDescription("Decisions a backend could not make, made by its failure policy, by backend and reason.")); err != nil {
		return nil, err
	}
	if m.keys, err = meter.Int64ObservableGauge("hotlimit.keys", metric.WithUnit("{key}"),
		metric.WithDescription("Keys held by a limiter or service.")); err != nil {
		return nil, err
	}
	if _, err = meter.RegisterCallback(m.observeKeys, m.keys); err != nil {
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
				attribute.String("rule", rule), attribute.String("outcome", hotlimit.Outcome(o).String())))}
		}
		return ro
	})
	return ro
}

// ObserveFallback records f; see [hotlimit.FallbackObserver].
func (m *Metrics) ObserveFallback(f hotlimit.Fallback) {
	m.fallbacks.Add(context.Background(), 1, metric.WithAttributes(
		attribute.String("backend", f.Backend), attribute.String("reason", f.Reason)))
}

// WatchKeys reports keys(), read at each collection, as hotlimit.keys with
// the attribute limiter=name: pass a service's or a limiter's Len. A second
// call with the same name replaces the first; a nil keys removes it.
func (m *Metrics) WatchKeys(name string, keys func() int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if keys == nil {
		delete(m.watched, name)
		return
	}
	m.watched[name] = keys
}

func (m *Metrics) observeKeys(_ context.Context, o metric.Observer) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, keys := range m.watched {
		o.ObserveInt64(m.keys, int64(keys()), metric.WithAttributes(attribute.String("limiter", name)))
	}
	return nil
}

var _ hotlimit.FallbackObserver = (*Metrics)(nil)
