package hotlimit

import (
	"slices"

	"github.com/hotlimit/hotlimit/internal/nilness"
)

// Outcome classifies a decision for an [Observer]. The zero value names none.
type Outcome uint8

// The outcomes an [Observer] sees.
const (
	// OutcomeAllowed is a request that passed with more than the near-limit
	// share of its quota left (see [WithNearLimit]).
	OutcomeAllowed Outcome = iota + 1
	// OutcomeNearLimit is a request that passed, leaving at most the
	// near-limit share of the key's capacity ([Config.Capacity]: the limit,
	// or the burst of a limit with one): 20% by default.
	OutcomeNearLimit
	// OutcomeDenied is a request that was refused.
	OutcomeDenied
	// OutcomeShadowDenied is a request that a limit in shadow mode would have
	// refused: it was counted as a denial would be, and the caller passed.
	OutcomeShadowDenied
)

var outcomeNames = [...]string{
	OutcomeAllowed:      "allowed",
	OutcomeNearLimit:    "near_limit",
	OutcomeDenied:       "denied",
	OutcomeShadowDenied: "shadow_denied",
}

// String returns the outcome's metric-friendly name: "allowed", "near_limit",
// "denied" or "shadow_denied"; "unknown" for a value that names none.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "unknown"
}

// Source is what decided, as an [Event] names it: a rule and one of its
// limits. It is read-only once an Event points to it, so an Observer may
// keep it. A service builds one Source per rule and limit and points every
// Event of theirs to it, but builds them with its rules, anew at every
// reload (Replace, WatchFile), even for a rule that has not changed; and
// envoyrls's server builds one per Event. So a cache keyed by the *Source
// gains an entry per rule at every reload, or per decision, and keeps the
// old Sources alive. Key a cache by what names the series, as hotlimitprom
// and hotlimitotel do: the Rule (and the Policy, when it matters).
type Source struct {
	// Rule names the rule that decided, such as `default` or
	// `apis["GET /pay"]`: its values are bounded by the configuration, never
	// by the keys, so it is fit for a metric label. But it holds the names
	// the configuration gives: a user's or a pair's override names its user
	// as configured (`users["alice"]`), so where users are secrets, such as
	// API keys, the name of each one's override is one too. Empty for a
	// limiter used on its own.
	Rule string
	// Policy is the limit that decided: for a rule of several limits, the one
	// that denied, or else the most constrained, with the least share of its
	// capacity left (Remaining/[Config.Capacity]), whose Remaining and
	// capacity give the Event's Outcome: near the limit when any limit it
	// was chosen among is. A limit whose limiter is known to have failed
	// (asked under a context, see service.LimitDecision.Err) is among them
	// only when no limit decided: its Remaining is its failure policy's,
	// which counts nothing. Limits in shadow mode are left out of
	// that choice, unless every limit of the rule is in shadow mode: one
	// reports only what it would have denied, as an Event of
	// [OutcomeShadowDenied], which names it (the first, for a rule of
	// several).
	Policy Config
}

// Event is one decision, as an [Observer] sees it. Its eight words fit in
// the registers of a call, so that a call passes it in registers, not on the
// stack: Rule and Policy are read through the embedded *Source, which an
// Event from this module's producers never leaves nil.
type Event struct {
	// Source names the rule and the limit that decided: e.Rule and
	// e.Policy.
	*Source
	// Outcome classifies the decision.
	Outcome Outcome
	// N is the number of requests asked for: 0 for a report (a Take of 0,
	// which changes nothing and is heard of all the same, allowed or near
	// the limit), negative for a caller's bug (denied).
	N int
	// Decision is the rule's decision, as service.Service.Take returns it.
	// For a rule of several limits its Remaining is the least of the
	// limits', which may be another limit's than Policy's, of another
	// capacity (TakePolicy returns Policy's own instead): classify by
	// Outcome, which was measured on Policy's own Remaining, rather than
	// by Decision against Policy.
	Decision Decision
}

// RuleName returns e.Rule, or "" for an Event that names no Source: how an
// Observer that may be handed Events from elsewhere reads the rule without a
// nil check.
func (e Event) RuleName() string {
	if e.Source == nil {
		return ""
	}
	return e.Rule
}

// Observer hears of every decision made by the limiters it is given to (see
// [WithObserver]). Observe is called on the deciding goroutine, after the
// decision, with no lock held: it must be safe for concurrent use, and should
// be as cheap as an atomic add, as it runs on the hot path. An unset Observer
// costs nothing. An Observer that may be unable to report, an exporter's
// zero value say, may also have a method CheckObserver() error, which the
// constructors it is given to ask (see [CheckObserver]).
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to an [Observer]. Observe on a nil
// ObserverFunc panics, as a call of a nil function does; [WithObserver] and
// [Observers] leave a nil one out, so that the producers never call it.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

// DefaultNearLimit is the share of a limit's capacity (see
// [Config.Capacity]) at or below which an allowed request's Remaining counts
// as near the limit: 20%.
const DefaultNearLimit = 0.2

// WithObserver makes a service.Service report each decision of its rules
// and of TakeWith to o, and redislimit's limiters report their fallbacks to
// it when it is a [FallbackObserver], and themselves, as they are built,
// when it is a [BackendObserver]. A nil o reports nothing, and so does
// an o that holds a nil pointer or function (a nil [ObserverFunc], or a
// nil *hotlimitprom.Metrics of a program whose metrics are off). The in-memory
// limiter constructors (tokenbucket.New and the others) ignore it: a limiter
// used on its own reports nothing, as its caller sees every decision. An o
// that says it cannot report, such as an exporter's Metrics declared
// rather than made by its constructor, is refused where it is given: see
// [CheckObserver].
func WithObserver(o Observer) Option {
	return func(opts *Options) { opts.Observer = o }
}

// WithNearLimit sets the share of a limit's capacity (its Limit, or its
// Burst when it has one; see [Config.Capacity]), in [0, 1], at or below which
// an allowed request's Remaining makes it [OutcomeNearLimit]. Values outside
// [0, 1] are clamped; NaN, which is no share, changes nothing. The default
// is [DefaultNearLimit].
func WithNearLimit(share float64) Option {
	return func(opts *Options) {
		if share == share { // not NaN, which min and max would keep
			opts.NearLimit = min(max(share, 0), 1)
		}
	}
}

// Classify returns the Outcome of d under the near-limit share nearLimit:
// OutcomeDenied or OutcomeShadowDenied (when shadow, the limit is in shadow
// mode and the caller passes anyway) for a denial, OutcomeNearLimit when d
// passed with Remaining at most nearLimit·Limit, else OutcomeAllowed. It is
// [ClassifyCapacity] with d.Limit as the capacity, right for a limit without
// a burst of its own.
func Classify(d Decision, shadow bool, nearLimit float64) Outcome {
	return ClassifyCapacity(d, shadow, nearLimit, d.Limit)
}

// ClassifyCapacity is [Classify] with the near-limit share taken of capacity,
// the most Remaining can be: OutcomeNearLimit when d passed with Remaining at
// most nearLimit·capacity. Pass the policy's [Config.Capacity], so that a
// token bucket or GCRA whose Burst is below its Limit (Remaining never above
// the burst) is near its limit when its burst runs low, not on every
// request, and one whose Burst is above it is near when the burst runs low,
// not only at its last few requests.
func ClassifyCapacity(d Decision, shadow bool, nearLimit float64, capacity int) Outcome {
	switch {
	case !d.Allowed && shadow:
		return OutcomeShadowDenied
	case !d.Allowed:
		return OutcomeDenied
	case float64(d.Remaining) <= nearLimit*float64(capacity):
		return OutcomeNearLimit
	}
	return OutcomeAllowed
}

// Fallback is a decision that a backend could not make, made by its failure
// policy instead: Redis down, slow or behind an open breaker, for redislimit.
// There is one per call to a limiter on the backend that its failure policy
// answered, reports (a Take of 0) included. A request decided by a rule of
// several limits on the backend makes one per limit, and, when a limit
// denies it, one more per other limit that the service (or a composite)
// then asks for its report or its wait: fallbacks count calls, not
// requests, so compare them with the decisions only for rules of one limit.
type Fallback struct {
	// Backend names the backend, such as "redis".
	Backend string
	// Reason says why, from a small fixed set fit for a metric label,
	// [FallbackReasons]: "timeout", "breaker_open", "canceled",
	// "clock_range" or "error".
	Reason string
	// Policy is the limit the backend enforces.
	Policy Config
	// Decision is the failure policy's decision, the one the limiter's
	// caller got: the service's own, for a report it asked for.
	Decision Decision
}

// FallbackObserver is an [Observer] that also hears of every [Fallback] of
// the backends it is given to. Like Observe, ObserveFallback runs on the
// deciding goroutine and must be safe for concurrent use.
type FallbackObserver interface {
	Observer
	ObserveFallback(Fallback)
}

// fallbackReasons is the set a [Fallback]'s Reason is from.
var fallbackReasons = [...]string{"timeout", "breaker_open", "canceled", "clock_range", "error"}

// FallbackReasons returns the reasons a [Fallback] gives, in a new slice:
// "timeout", "breaker_open", "canceled", "clock_range" and "error".
func FallbackReasons() []string { return slices.Clone(fallbackReasons[:]) }

// BackendObserver is a [FallbackObserver] that also hears of each limiter
// built on a backend, before any of its fallbacks: the limiter's
// constructor calls ObserveBackend with the name its Fallbacks give as
// Backend (redislimit.New, with redislimit.Backend, "redis"), once per
// limiter built: for a service, once per limit of its rules as it is made
// (rules of one limit, whatever their scopes and shadow modes, share its
// limiter), once per limit a reload adds (a limit the reload keeps keeps
// its limiter, and is not told of again), and once per limit of its
// TakeWith plans, at the first use of one (plans that differ only in scope
// or shadow mode share a limiter, apart from the rules').
// An exporter counts there, at 0, the backend's fallbacks for each of
// [FallbackReasons], so that a counter exists before its first fallback:
// Prometheus' rate() and increase() count nothing into a series' first
// sample, and would miss a first outage that starts the series. A limiter
// built at its first use may fall back at once: a program whose limiters on
// a backend are all built so calls ObserveBackend itself at start.
// ObserveBackend must be safe for concurrent use.
type BackendObserver interface {
	FallbackObserver
	ObserveBackend(backend string)
}

// Observers returns an [Observer] that passes every decision to each of obs,
// in order, every [Fallback] to each of them that is a [FallbackObserver],
// and every backend a limiter is built on to each that is a
// [BackendObserver]: give it to [WithObserver] to report to two exporters
// at once, such as hotlimitprom and hotlimitotel while moving from one to
// the other. (An [ObserverFunc] that calls both would lose the fallbacks, as a
// function is no FallbackObserver.) The nil ones, and those holding a nil
// pointer or function, are left out; with none left Observers returns nil,
// which reports nothing, and with one it returns that one. Observers
// allocates nothing per decision.
//
// An observer given twice, or reached twice through nested Observers, hears
// every decision and fallback twice, as io.MultiWriter(w, w) writes twice:
// Observers(m, m) counts each decision twice in m. That is the caller's
// choice, not corrected here, as a function (an ObserverFunc) cannot be
// compared with another to find it twice; give each observer once.
//
// Code that looks for an observer of its own type in the one it is given,
// as envoyrls looks for its *Metrics, finds it through a method
// Unwrap() []Observer, which returns those passed on to, as an error of
// errors.Join has Unwrap() []error.
func Observers(obs ...Observer) Observer {
	var all []Observer
	var fallbacks []FallbackObserver
	for _, o := range obs {
		if o == nil || nilness.HoldsNil(o) {
			continue
		}
		all = append(all, o)
		if f, ok := o.(FallbackObserver); ok {
			fallbacks = append(fallbacks, f)
		}
	}
	switch len(all) {
	case 0:
		return nil
	case 1:
		return all[0]
	}
	return &fanOut{all: all, fallbacks: fallbacks}
}

// CheckObserver returns the error of an observer that cannot report, nil
// for any other. An Observer says it cannot report with a method
// CheckObserver() error that returns an error: the Metrics of hotlimitprom,
// hotlimitotel and envoyrls have one, which returns an error saying to
// call the package's constructor for a zero value, declared rather than
// made (it has nothing to record into), and nil for one made by it or a
// nil one. An exporter of a program's own may have one too. CheckObserver
// asks o, and each observer o passes on to, through a method
// Unwrap() []Observer, as the result of [Observers] has, nested ones
// included, and returns the first error. A nil o, or one holding a nil
// pointer or function, which reports nothing as [WithObserver] documents,
// is no error.
//
// service.New and service.NewFromRules, redislimit.New (so a
// redislimit.Factory's limiters as they are built) and envoyrls.New call
// it on the observer they are given, and return its error rather than
// build something that reports nothing. The in-memory limiter
// constructors, which ignore an observer, do not. It runs once, where the
// observer is given, never on a decision.
func CheckObserver(o Observer) error {
	if o == nil || nilness.HoldsNil(o) {
		return nil
	}
	if c, ok := o.(interface{ CheckObserver() error }); ok {
		if err := c.CheckObserver(); err != nil {
			return err
		}
	}
	if fan, ok := o.(interface{ Unwrap() []Observer }); ok {
		for _, inner := range fan.Unwrap() {
			if err := CheckObserver(inner); err != nil {
				return err
			}
		}
	}
	return nil
}

// fanOut is the Observer of several; see [Observers].
type fanOut struct {
	all       []Observer
	fallbacks []FallbackObserver
}

// Observe passes e to every observer.
func (f *fanOut) Observe(e Event) {
	for _, o := range f.all {
		o.Observe(e)
	}
}

// Unwrap returns the observers f passes on to; see [Observers].
func (f *fanOut) Unwrap() []Observer { return f.all }

// ObserveFallback passes fb to every observer that hears of fallbacks.
func (f *fanOut) ObserveFallback(fb Fallback) {
	for _, o := range f.fallbacks {
		o.ObserveFallback(fb)
	}
}

// ObserveBackend passes backend to every observer that hears of backends.
func (f *fanOut) ObserveBackend(backend string) {
	for _, o := range f.fallbacks {
		if b, ok := o.(BackendObserver); ok {
			b.ObserveBackend(backend)
		}
	}
}
