package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/puzpuzpuz/xsync/v3"
)

// Service decides allow(user, api) under a default policy and per-user,
// per-API and per-pair overrides. The zero value is not usable (it takes
// no rules: see [Service.Replace]); call [New].
// A Service is safe for concurrent use: Allow and Take never lock, and may run
// concurrently with Replace, Configure* and WatchFile.
//
// A decision resolves the pair's rule from the immutable snapshot of the rules
// (plain map reads, skipped for the kinds of override that are empty) and
// asks the rule's limiter under the key of the pair (or of the user, the api,
// or everyone; see [hotlimit.Scope]), so it always uses the rules in force
// when it started, and costs the limiter's one map lookup and CAS. The
// service keeps nothing per pair besides its limiters' state: the in-memory
// limiters are asked under a key built on the decision's own stack (in a
// recycled buffer for a rule of several limits, or a key of over 512 bytes;
// they keep a copy of the keys they store); a factory's limiters, which may
// keep the keys they are given, under keys from a cache that the service empties once it holds
// more than twice the limiters' keys. So the limiters' eviction (their Sweep,
// [hotlimit.WithAutoSweep], [Service.Sweep]) frees everything an idle pair
// held.
type Service struct {
	opts []hotlimit.Option

	// mu serialises writers of rules; Allow and Take never take it.
	mu sync.Mutex
	// closed is closed by the first Close, with mu and overrideMu held: it
	// ends the service's WatchFile loops, a watcher installs nothing once
	// it is, and every limiter built from then on is closed as it is built.
	closed chan struct{}
	// overrideMu orders the first store of each limiter in
	// overrideLimiters with Close: Close closes those it finds stored,
	// and a limiter stored after it is closed by the TakeWith that built
	// it, which reads closed under overrideMu. It is held only for the
	// store and that read, or for Close's listing of the limiters, never
	// while a limiter is built or closed.
	overrideMu sync.Mutex
	// rules is the current snapshot: loaded by anyone, stored only with mu
	// held (one Store per Replace or Configure*), and never modified once
	// stored.
	rules atomic.Pointer[rules]

	// keys caches the state keys of the pairs, users and apis seen lately;
	// see keyCache.
	keys *keyCache

	// overrides holds the rule of each Config given to TakeWith, built on
	// its first use and kept: loaded by anyone, stored once per Config.
	overrides *xsync.MapOf[hotlimit.Config, *rule]
	// overrideLimiters holds the limiters of those rules, one per Config
	// without its scope and shadow mode (see unscoped), as a snapshot's
	// limiters do: stored once per such Config, before any rule uses it.
	overrideLimiters *xsync.MapOf[hotlimit.Config, hotlimit.Limiter]

	// dropping counts the installs of rules (Replace, Configure*, a
	// WatchFile reload) still closing the limiters they dropped, which
	// they do after releasing mu: Add is called with mu held, only before
	// Close (see replaceLocked), and Close waits for it, so that no
	// limiter the service built is left open, or closing, once Close
	// returns.
	dropping sync.WaitGroup
}

// New returns a Service whose default policy is def. opts (a clock, auto-sweep)
// apply to every limiter the service builds; [hotlimit.WithFactory] replaces
// the in-memory limiters, with redislimit.Factory say, so that many instances
// share one state. Idle pairs are evicted without a call to Sweep unless
// opts say otherwise (see [DefaultAutoSweep]). It returns an error wrapping
// hotlimit.ErrInvalidConfig when def is invalid, and the factory's error,
// naming the limit, when a factory fails to build it (returning no limiter
// without an error counts as failing).
func New(def hotlimit.Config, opts ...hotlimit.Option) (*Service, error) {
	return NewFromRules(Rules{Default: Limits{def}}, opts...)
}

// DefaultAutoSweep is the auto-sweep threshold of the limiters a Service
// builds unless its options set one (see [hotlimit.WithAutoSweep];
// WithAutoSweep(0) turns it off): under a flood of new pairs, users or
// client addresses each limiter holds fewer than about 1.6 times its live
// keys plus DefaultAutoSweep, and no call to Sweep is needed.
const DefaultAutoSweep = 1 << 16

// NewFromRules returns a Service enforcing rules. opts (a clock, auto-sweep)
// apply to every limiter the service builds; auto-sweep is on by default (see
// [DefaultAutoSweep]). A [hotlimit.WithBurst] among them is the burst of
// every token bucket and GCRA limit that sets none (the other algorithms
// have no burst, and keep their limit), and the limits the service reports ([Service.TakePolicy], [Service.TakeEach], an Event's
// Policy) spell it out in their Burst. It returns an error naming the
// offending entry and wrapping hotlimit.ErrInvalidConfig when rules are
// invalid (see [Rules.Validate]) or a rule holds a limit beside its copy
// with the burst a limit of no burst takes under opts spelled out, which
// Validate, not knowing opts, leaves to the service (see [Limits]), and
// the factory's error, naming the
// entry, when a factory fails to build a limit (returning no limiter
// without an error counts as failing). An observer that cannot report (see
// [hotlimit.CheckObserver]), such as a zero-value hotlimitotel.Metrics,
// is an error too, and so is a negative [hotlimit.WithBurst], whatever the
// rules hold.
func NewFromRules(rules Rules, opts ...hotlimit.Option) (*Service, error) {
	opts = append([]hotlimit.Option{hotlimit.WithAutoSweep(DefaultAutoSweep)}, opts...) // later options win
	if err := hotlimit.CheckObserver(hotlimit.NewOptions(opts...).Observer); err != nil {
		return nil, fmt.Errorf("service: WithObserver: %w", err)
	}
	if b := hotlimit.NewOptions(opts...).Burst; b < 0 {
		// Refused here, whatever the rules hold: the limits of an
		// algorithm without a burst would refuse it as a burst they do
		// not take, and those that set their own would let it by until a
		// Replace brings one that does not.
		return nil, fmt.Errorf("service: burst %d must not be negative (hotlimit.WithBurst; 0 leaves each limit its own): %w", b, hotlimit.ErrInvalidConfig)
	}
	snap, err := build(rules, nil, opts)
	if err != nil {
		return nil, err
	}
	s := &Service{opts: opts, closed: make(chan struct{}), overrides: xsync.NewMapOf[hotlimit.Config, *rule](),
		overrideLimiters: xsync.NewMapOf[hotlimit.Config, hotlimit.Limiter]()}
	s.keys = newKeyCache(hotlimit.NewOptions(opts...).AutoSweep, s.Len)
	s.rules.Store(snap)
	return s, nil
}

// Built reports whether s was made by [New] or [NewFromRules]: false for a
// nil s and for the zero Service, which is not usable (it has no rules,
// key cache, auto-sweep or [Service.TakeWith] limiters; [Service.Replace]
// and the Configure methods refuse it, [Service.WatchFileWith] says so and
// returns, [Service.Close] returns nil, [Service.Refund] gives back
// nothing and [Service.RefundContext] says why, and its other methods
// panic, as methods on a nil pointer do). A copy of a built Service, and
// one that was closed, are built. httplimit and grpclimit take a Service
// that is not built for a missing one.
func (s *Service) Built() bool {
	return s != nil && s.keys != nil // set by NewFromRules only
}

// UnmatchedAPIs returns the APIs the rules in force name that are none of
// routes; see [UnmatchedAPIs].
func (s *Service) UnmatchedAPIs(routes []string) []string {
	return UnmatchedAPIs(s.Rules(), routes)
}

// Rules returns the rules in force, as a value the caller owns: changing it
// changes nothing until it is passed to [Service.Replace]. Empty maps come
// back nil.
func (s *Service) Rules() Rules {
	return s.rules.Load().export()
}

// Replace makes rules the service's whole policy, at once: a concurrent Allow
// decides under either the old rules or the new ones, never a mix. Pairs whose
// rule has the same limits as before keep their state, and so does every
// pair's state under each Config both rule sets use, because the service keeps
// one limiter per distinct Config and reuses it (Configs that differ only in
// scope, shadow mode, or a burst spelled out or not that is the one a burst
// of 0 stands for, the limit or the service's [hotlimit.WithBurst], are
// one); limiters no rule uses any more are dropped with their state, and
// closed when they hold resources (see [Service.Close]) once the new rules
// are in force, so that a limiter on Redis gives its leases back and stops
// its goroutines (a decision still under way on one decides as a closed
// limiter does; an error of its Close is not reported). So a
// limit changed in its algorithm, limit, window or burst is another limit,
// which every key starts afresh, whatever it spent under the old one:
// lowering a limit under abuse gives each key the lowered quota anew. The old
// limit kept beside the new one in the rule until its window ends keeps its
// count, so that no key passes more than either allows. (On Redis, with
// redislimit's Factory, each limit counts under Redis keys of its own, which
// outlive its limiter until they expire: a limit changed and then changed
// back within a window finds the counts it left.)
// On error (see [Rules.Validate], and [Limits] for the copies of a limit
// that only the service's burst makes) nothing changes. A nil or zero
// Service, which [New] did not make (see [Service.Built]), takes no rules:
// Replace returns an error saying so.
func (s *Service) Replace(rules Rules) error {
	if !s.Built() {
		return errNotBuilt
	}
	var dropped []hotlimit.Limiter
	defer func() { s.closeDropped(dropped) }() // after the unlock
	s.mu.Lock()
	defer s.mu.Unlock()
	var err error
	dropped, err = s.replaceLocked(rules)
	return err
}

// replaceLocked builds and publishes the snapshot of rules; s.mu is held.
// After Close, the limiters it builds are closed at once (see Close).
// Before Close, it returns the limiters of the rules it replaced that no
// rule uses any more, for the caller to close once s.mu is released: a
// limiter on Redis gives its leases back as it closes, which takes round
// trips that must not hold up another Replace or Close. The caller passes
// them to closeDropped, which Close waits for.
func (s *Service) replaceLocked(rules Rules) (dropped []hotlimit.Limiter, err error) {
	prev := s.rules.Load()
	next, err := build(rules, prev, s.opts)
	if err != nil {
		return nil, err
	}
	s.rules.Store(next)
	if s.isClosed() {
		// Close closed prev's limiters, and those of every snapshot
		// since, as they were built: close the ones built here, those
		// of the Configs prev has none of (build reuses prev's limiter
		// of every Config prev has).
		for u, lim := range next.limiters {
			if _, ok := prev.limiters[u]; !ok {
				_ = closeAll([]hotlimit.Limiter{lim})
			}
		}
		return nil, nil
	}
	// build reuses prev's limiter of every Config next has: the others
	// are dropped.
	for u, lim := range prev.limiters {
		if _, ok := next.limiters[u]; !ok {
			dropped = append(dropped, lim)
		}
	}
	if len(dropped) > 0 {
		s.dropping.Add(1) // before Close: it closes s.closed with mu held
	}
	return dropped, nil
}

// closeDropped closes the limiters that replaceLocked dropped, once s.mu
// is released, and tells Close, which waits for it, that they are closed.
func (s *Service) closeDropped(dropped []hotlimit.Limiter) {
	if len(dropped) == 0 {
		return
	}
	defer s.dropping.Done()
	_ = closeAll(dropped)
}

// isClosed reports whether Close was called.
func (s *Service) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// ConfigureUser sets the policy of every request from user, below API and
// pair overrides, to the single limit c, replacing the user's rule if it has
// one. The error, when c is invalid, names the rule, as in
// `users["alice"][0]: ...`, and wraps hotlimit.ErrInvalidConfig; on error
// nothing changes. A user no request comes from (a name spelled otherwise
// than the requests' users, such as "premium" where httplimit's users are
// tagged keys, "header:x-api-key:premium") is accepted and never applies:
// [Rules.NamedUsers] of [Service.Rules] lists the users the rules name.
func (s *Service) ConfigureUser(user string, c hotlimit.Config) error {
	return s.configure(func(r *Rules) { r.Users = set(r.Users, user, c) })
}

// ConfigureAPI sets the policy of every request to api, below pair overrides
// and above user overrides, to the single limit c, replacing the api's rule
// if it has one. The error, when c is invalid, names the rule, as in
// `apis["GET /pay"][0]: ...`, and wraps hotlimit.ErrInvalidConfig; on error
// nothing changes. An api no request is made to (a misspelled route, "pay"
// for "GET /pay") is accepted and never applies: [Service.UnmatchedAPIs]
// lists such rules.
func (s *Service) ConfigureAPI(api string, c hotlimit.Config) error {
	return s.configure(func(r *Rules) { r.APIs = set(r.APIs, api, c) })
}

// ConfigureUserAPI sets the policy of requests from user to api, above every
// other rule, to the single limit c, replacing the pair's rule if it has one.
// The error, when c is invalid, names the rule, as in
// `pairs["alice","GET /pay"][0]: ...`, and wraps hotlimit.ErrInvalidConfig;
// on error nothing changes.
func (s *Service) ConfigureUserAPI(user, api string, c hotlimit.Config) error {
	return s.configure(func(r *Rules) { r.Pairs = set(r.Pairs, Pair{user, api}, c) })
}

// set returns m, made if nil, with m[k] set to the single limit c.
func set[K comparable](m map[K]Limits, k K, c hotlimit.Config) map[K]Limits {
	if m == nil {
		m = map[K]Limits{}
	}
	m[k] = Limits{c}
	return m
}

// errNotBuilt is the error of Replace and Configure* on a Service New did
// not make.
var errNotBuilt = errors.New("service: the Service was not made by New or NewFromRules: make it with service.New or service.NewFromRules")

// configure replaces the rules by a copy changed by change, as one Replace.
// Like Replace, it refuses a Service New did not make.
func (s *Service) configure(change func(*Rules)) error {
	if !s.Built() {
		return errNotBuilt
	}
	var dropped []hotlimit.Limiter
	defer func() { s.closeDropped(dropped) }() // after the unlock
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.rules.Load().export()
	change(&next)
	var err error
	dropped, err = s.replaceLocked(next)
	return err
}

// Resolve returns the policy that applies to requests from user to api: the
// first limit of the pair's rule, the only one unless the rule has several
// (see [Service.ResolveLimits]). It is the limit as the rules give it: a
// token bucket or GCRA limit that sets no burst reads Burst 0 even when the
// service's [hotlimit.WithBurst] gives it one, which [Service.TakePolicy]
// spells out.
func (s *Service) Resolve(user, api string) hotlimit.Config {
	return s.rules.Load().resolve(user, api).limits[0]
}

// ResolvePolicy is [Service.Resolve] as [Service.TakePolicy] names a
// limit: the first limit of the pair's rule not in shadow mode (the first,
// when every limit of the rule is in shadow mode), since TakePolicy never
// names a limit in shadow mode beside others; and with the service's burst
// spelled out: a token bucket or GCRA limit that sets no burst reads the
// burst of the service's [hotlimit.WithBurst], when it gives one. Under a
// rule of several limits enforced, TakePolicy names the one that decided,
// which depends on what each holds; ResolvePolicy names the first. It
// decides nothing and reports nothing to the observer: it is the policy to
// name for a request that will not be decided, as httplimit and grpclimit
// name one whose context ended first.
func (s *Service) ResolvePolicy(user, api string) hotlimit.Config {
	return s.ResolvePolicies(user, api)[0] // a rule has a limit at least
}

// ResolvePolicies returns the limits of the rule that applies to requests
// from user to api that [Service.TakeEach] lists, as a slice the caller
// owns: those not in shadow mode (every one, when all are), each with the
// service's burst spelled out as [Service.ResolvePolicy] spells it. They
// are in the rule's order, ResolvePolicy's first, where TakeEach lists the
// limit that decided first and the others as the rule asks them (sliding
// logs last). All come from one snapshot of the rules: a Replace landing
// meanwhile never mixes the old rule's limits with the new one's. It
// decides nothing and reports nothing to the observer: with it, httplimit
// and grpclimit name the policy of a request that will not be decided
// among the rule's others, as they name a decided one's.
func (s *Service) ResolvePolicies(user, api string) Limits {
	ru := s.rules.Load().resolve(user, api)
	out := make(Limits, 0, len(ru.limits))
	for _, c := range ru.limits {
		if !c.Shadow {
			out = append(out, burst.Spelled(c, ru.defBurst))
		}
	}
	if len(out) == 0 { // every limit is in shadow mode
		for _, c := range ru.limits {
			out = append(out, burst.Spelled(c, ru.defBurst))
		}
	}
	return out
}

// ResolveLimits returns every limit of the rule that applies to requests from
// user to api, as a slice the caller owns, each as the rules give it (see
// [Service.Resolve]).
func (s *Service) ResolveLimits(user, api string) Limits {
	return slices.Clone(s.rules.Load().resolve(user, api).limits)
}

// TakePolicy is Take, plus the limit that decided it, from the same rules as
// the decision, so a Replace or Configure* landing meanwhile cannot make the
// two disagree. The limit that decided is, for a denial, the limit that
// denied; for an allowed request (or a report, n = 0), the rule's most
// constrained limit, the one with the least share of its capacity left
// (Remaining/[hotlimit.Config.Capacity]: of its burst, for a token bucket or
// GCRA with one; on a tie, the first asked: in the rule's order, sliding
// logs last, as Take asks them), which is the
// share an observer's near_limit outcome measures; for a rule of one limit,
// that limit. Under [Service.TakePolicyContext] and [Service.TakeEach], a
// limit whose limiter could not decide (one on Redis that cannot reach it:
// [LimitDecision.Err]) does not decide an allowed request beside a limit that
// did: its numbers are its failure policy's (redislimit's FailOpen reports a
// Remaining of 0 that counts nothing), so it is the decider only when no
// limit decided, or when its failure policy denied the request. (Without a
// context, as here, a limiter's failure is not known, and its numbers are
// taken as they come.) Limits in
// shadow mode are left out of both the Decision and the choice, unless every
// limit of the rule is in shadow mode. It is the
// policy a caller names to its client, as httplimit does in its 429 body and
// RateLimit-Policy header.
//
// The Decision describes that limit, so that the two can be advertised
// together: Allowed and RetryAfter are the rule's, as Take returns them
// (all or nothing), while Limit, Remaining and ResetAfter are the deciding
// limit's own. Under a rule of several limits they may differ from Take's,
// which are the rule's: the least Remaining of its limits (what would still
// pass, which may be another limit's) and the largest ResetAfter (until
// every limit is full again). With a 10/s token bucket of burst 20 holding
// 10 and a 100/min window holding 40, the window decides (40/100 < 10/20):
// TakePolicy returns it with Remaining 40, Take returns Remaining 10.
func (s *Service) TakePolicy(user, api string, n int) (hotlimit.Decision, hotlimit.Config) {
	return s.rules.Load().resolve(user, api).take(s.keys, user, api, n, true)
}

// Allow reports whether one request from user to api passes, and counts it if
// so. An observer (see [hotlimit.WithObserver]) hears of it as of Take(user,
// api, 1), except that, on the limiters that report Remaining with Allow
// (all the in-memory ones but Unlimited), the Event's
// Decision carries Allowed, Limit and Remaining only: Allow's caller gets no
// RetryAfter or ResetAfter, and they are not computed. (A rule of a limit in
// shadow mode that a [WithShadowHook] hears of is asked as Take is: its
// Events carry them.)
func (s *Service) Allow(user, api string) bool {
	return s.rules.Load().resolve(user, api).allow(s.keys, user, api)
}

// Take asks for n requests from user to api at once, under the pair's rule;
// see hotlimit.Limiter. Each limit of the rule counts under the key of its
// scope: the pair's, the user's, the api's or everyone's. Under a rule of
// several limits, all n pass every limit or none is counted by any (a denial
// by one never spends another's quota), and the Decision is the most
// restrictive of the limits' (see package composite): Limit and Remaining
// of the limit with the least Remaining, so Remaining is what would still
// pass; the largest ResetAfter; RetryAfter the least wait after which every
// limit admits the request: the largest of the wait of the limit that
// denied and of those of the limits after it that would deny it too (each
// of those, known by its report, is asked for the n requests: a denial
// takes nothing, and a limit that admits them, its state having changed
// meanwhile, gives them back at once), so that under 1 per second and 1 per
// minute the second request, half a second after the first, waits 59.5 s,
// not the second's 0.5 s; or hotlimit.Never when n is more than some limit
// not in shadow mode can ever admit (its Limit, or its burst), even if
// another limit is short of n for now: such a request is taken by no limit
// (each only reports, and it changes no limit's state), and the limit that
// decided it is the first that can never admit n whose report did not
// fail, or, when all of those failed to report, the first of them. A
// sliding log of slidinglog's is asked without a Take, by
// slidinglog.Limiter.RetryAfter, which counts nothing (its Take of several
// requests can be denied with some of them counted under concurrent
// requests, see hotlimit.Limiter, and one given back holds the log's
// capacity for a window, see slidinglog.Limiter.Refund), as is a composite
// a factory built holding one, child by child (see composite.Asker). Not
// asked for n, and so left out of the wait: any other sliding log (one that
// reports its Config as one, as redislimit's do, or built for a sliding
// log's Config) when n > 1, a limit whose report failed, one in shadow
// mode, or, once the request's context has ended, one that decides with a
// context (it could only fail; see composite.UsesContext): after
// RetryAfter such a limit may still deny the request. The limits are asked
// in the rule's order, sliding logs last, but for those that can be asked
// together (a [hotlimit.Batcher]'s, as redislimit's limiters on one client
// without a lease are): when two or more limits other than sliding logs
// can, they are asked at once when the first of them has its turn (one
// round trip to Redis, not one per limit; those Redis cannot decide then,
// but the first, are asked again in their turn, see
// hotlimit.BatchTake.Ahead), and when a limit denies the request, those of
// them that took it give it back, as the limits before the denier do, and
// report, all in one more round trip (see hotlimit.BatchTake.GiveBack); a
// report (n = 0) asks them in one too. [Service.TakePolicy] returns the
// deciding limit's own instead.
func (s *Service) Take(user, api string, n int) hotlimit.Decision {
	d, _ := s.rules.Load().resolve(user, api).take(s.keys, user, api, n, false)
	return d
}

// TakeContext is Take under ctx, for limiters whose decisions wait on
// something outside the process, such as redislimit's on Redis: each limiter
// of the pair's rule that takes a context (see [hotlimit.ContextTaker] and,
// for a rule of several limits, [hotlimit.ContextRefunder]) is asked under
// ctx, so that a request's deadline bounds the decision; the in-memory
// limiters decide at once and ignore it. The error is the limiters' (for
// several, joined, each after its limit's name, as in "FixedWindow 10/1h0m0s
// per user: ..."): the decision is then what their failure policy decided,
// as redislimit documents. A rule of several limits gives back what a denial
// took under ctx without its cancellation; so too, when ctx ended during the
// decision and a limiter could not decide for it (the decision passing by
// its failure policy, counting nothing there), what the other limits took: a
// request that has ended is not to be served, and is counted by none of the
// rule's limits, and the error then wraps ctx's (context.Canceled or
// context.DeadlineExceeded; a ctx past its deadline has ended, though its
// timer may not have run yet, as when a backend that sets the deadline on
// its socket fails at it first). So is the error of a rule of one limit
// whose failure policy passed a request that ended so, though it has nothing
// to give back and its limiter's own error (a socket's "i/o timeout") may
// wrap no context error. The gateways answer a request whose error wraps its
// context's without serving it: ask the error, not ctx, which may have ended
// only after the decision. A nil ctx is context.Background(), as it is for
// every method of the service that takes a context.
func (s *Service) TakeContext(ctx context.Context, user, api string, n int) (hotlimit.Decision, error) {
	d, _, err := s.rules.Load().resolve(user, api).takeContext(orBackground(ctx), s.keys, user, api, n, false)
	return d, err
}

// TakePolicyContext is [Service.TakePolicy] under ctx, as
// [Service.TakeContext] is Take: the decision, the limit that decided it,
// and the limiters' error, when one could not decide (the decision is then
// its failure policy's).
func (s *Service) TakePolicyContext(ctx context.Context, user, api string, n int) (hotlimit.Decision, hotlimit.Config, error) {
	return s.rules.Load().resolve(user, api).takeContext(orBackground(ctx), s.keys, user, api, n, true)
}

// LimitDecision is one limit of a rule with its own decision, as
// [Service.TakeEach] reports it.
type LimitDecision struct {
	// Config is the limit, with its scope.
	Config hotlimit.Config
	// Decision is the rule's Allowed and RetryAfter, with the limit's own
	// Limit, Remaining and ResetAfter after the request.
	Decision hotlimit.Decision
	// Err is this limit's own error, nil when its limiter decided and gave
	// back what it was asked to: the limiter could not decide (its Limit,
	// Remaining and ResetAfter are then its failure policy's, and so is the
	// rule's denial when this is the limit that decided it; or, asked for
	// the request after another limit denied it, to learn its wait, it could
	// not tell it), or could not give back what it took. The error TakeEach returns joins every
	// limit's, with the request's end when it was given back. A gateway
	// tells a denial by a limit that decided (a quota spent) from one its
	// failure policy made (no quota spent: a dependency unavailable) by the
	// deciding limit's Err, not by that error: another limit of the rule
	// may have failed to report its state for a denial that is real. For
	// a limit whose limiter is a composite, Err is so of its children:
	// composite.DecidingError of its error.
	Err error
}

// TakeEach is [Service.TakeContext], and also appends to dst every limit of
// the rule with its own decision, so that a caller can advertise each, as
// the RateLimit fields of the IETF draft list several policies with their
// own remaining count and reset; it returns the rule's Decision, Take's.
// The first limit appended is the one that decided, with the Decision
// [Service.TakePolicyContext] returns, then the others in the order the
// rule asks them (its order, sliding logs last). When another limit denied the
// request, each limit's Remaining is what it holds once the denial gave
// back what it took (as its report says, even for a limit asked for the
// request afterwards to learn its wait, see [Service.Take]); when the request ended while a limit could not decide
// and the limits gave back what they took (see [Service.TakeContext]), its
// numbers are still its Take's, not asked again under the ended context.
// Limits in shadow mode are left out, unless every limit of the rule is in
// shadow mode. A rule of one limit appends it alone.
// With a dst of room for the rule's limits (at most 16), it allocates no
// more than TakeContext.
func (s *Service) TakeEach(ctx context.Context, user, api string, n int, dst []LimitDecision) (hotlimit.Decision, []LimitDecision, error) {
	return s.rules.Load().resolve(user, api).takeEach(orBackground(ctx), s.keys, user, api, n, dst)
}

// OverrideRule is the rule name the observer sees for decisions of
// [Service.TakeWith].
const OverrideRule = "override"

// TakeWith is Take under the limit c instead of the pair's rule, for this
// call only: per-tenant plans, or a limit that comes with the request (as in
// Envoy's rate limit protocol). c's scope chooses the key, as in a rule; its
// Shadow is honoured; the observer sees the decision under the rule name
// [OverrideRule]. The service builds one limiter per distinct c on its first
// use (holding no lock while the factory runs, so that a slow factory delays
// that call only; later calls with c never lock) and keeps it, so its quota
// carries across calls; as in the rules, Configs
// that differ only in scope, shadow mode, or a burst spelled out or not
// that is the one a burst of 0 stands for, share it (so turning a plan's shadow mode off keeps
// what its keys spent). It is apart from any rule's, even one with the same
// Config. Its keys count in [Service.Len]
// and are evicted by [Service.Sweep] and auto-sweep as the rules' are, but
// the limiter itself is kept as long as the service (with
// [hotlimit.WithMaxKeys], with a map sized up front for the cap's keys, up
// to 1<<20): c must come from a bounded set of plans, never be built from
// what a client sends unchecked. It returns an error wrapping
// hotlimit.ErrInvalidConfig, and a denied Decision, when c is invalid, and
// an error naming c and wrapping the factory's, with a denied Decision,
// when a factory fails to build c's limiter (tried again at the next call).
// No limit decided such a denial: the observer does not hear of it, so it
// counts in no metric, not even under [OverrideRule]; count the errors
// where they are returned. After [Service.Close] it decides as Take does
// then, with a limiter that is closed: one built then, or during Close, is
// closed as soon as it is built. It gives no receipt: what it admits
// stays counted (see [Service.TakeReceipt] for the rules' limits).
func (s *Service) TakeWith(user, api string, c hotlimit.Config, n int) (hotlimit.Decision, error) {
	ru, err := s.override(c)
	if err != nil {
		return hotlimit.Decision{Limit: c.Limit, RetryAfter: hotlimit.Never}, err
	}
	d, _ := ru.take(s.keys, user, api, n, false)
	return d, nil
}

// TakeWithContext is [Service.TakeWith] under ctx, as [Service.TakeContext]
// is Take: a limiter that takes a context (redislimit's) decides under it.
// The error wraps hotlimit.ErrInvalidConfig when c is invalid, with a denied
// Decision, and wraps the factory's, with a denied Decision, when a
// factory fails to build c's limiter; the observer hears of neither, as for
// TakeWith. Otherwise it is the limiter's, when it could not decide (the
// decision is then its failure policy's).
func (s *Service) TakeWithContext(ctx context.Context, user, api string, c hotlimit.Config, n int) (hotlimit.Decision, error) {
	ru, err := s.override(c)
	if err != nil {
		return hotlimit.Decision{Limit: c.Limit, RetryAfter: hotlimit.Never}, err
	}
	d, _, err := ru.takeContext(orBackground(ctx), s.keys, user, api, n, false)
	return d, err
}

// orBackground returns ctx, or context.Background() for nil: within the
// service, a nil ctx means that no limiter is asked under a context (see
// multi.take), which a caller's nil must not turn into a decision that
// drops the limiters' errors, nor hand to a limiter that would panic on it.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}

// override returns the rule of TakeWith's c, building it on first use. Two
// first uses at once may both build a limiter, or a rule: one is kept, the
// other dropped unused (a dropped limiter is closed). The rules of Configs that share a limiter (see
// unscoped) get the one kept in overrideLimiters, by its LoadOrStore, so
// they never count a key in two. A limiter kept after Close listed the
// limiters is closed here (see overrideMu), so that none is left open.
func (s *Service) override(c hotlimit.Config) (*rule, error) {
	if ru, ok := s.overrides.Load(c); ok {
		return ru, nil
	}
	if !c.Scope.Valid() {
		return nil, fmt.Errorf("service: TakeWith's limit %v: Config.Scope %v is not a scope: %w", c, c.Scope, hotlimit.ErrInvalidConfig)
	}
	o := hotlimit.NewOptions(s.opts...)
	u := unscoped(c, o.Burst)
	lim, ok := s.overrideLimiters.Load(u)
	if !ok {
		// Built without a lock: a factory may take a while (a Redis
		// dial), and other first uses, Replace and Close need not wait.
		built, err := newLimiter(u, s.opts...)
		if err != nil {
			return nil, fmt.Errorf("service: TakeWith's limit %v: %w", c, err)
		}
		s.overrideMu.Lock()
		var loaded bool
		lim, loaded = s.overrideLimiters.LoadOrStore(u, built)
		closed := s.isClosed()
		s.overrideMu.Unlock()
		if loaded || closed {
			// Either another first use's limiter is kept, and built is
			// dropped, or built is kept after Close listed the
			// limiters to close: closed either way, once, as Close
			// closes only what it listed.
			_ = closeAll([]hotlimit.Limiter{built})
		}
	}
	ru := &rule{limits: Limits{c}, lim: lim, scope: c.Scope, transient: copiesKeys(lim),
		name: OverrideRule, obs: o.Observer, shadowHook: shadowHookOf(o), near: o.NearLimit, defBurst: o.Burst, slow: o.Observer != nil || c.Shadow}
	ru.setFast()
	ru.setSources()
	ru, _ = s.overrides.LoadOrStore(c, ru)
	return ru, nil
}

// Close closes every limiter of the rules in force, and of
// [Service.TakeWith], that holds resources (implements io.Closer), such as
// redislimit's batching goroutines and leases, and returns their errors
// joined. The in-memory limiters hold none. Limiters that an earlier
// Replace dropped are closed by that Replace: should it still be closing
// them, Close waits until it has (their errors are not reported), so
// that when Close returns no limiter the rules ever used is open. Should a
// limiter's Close panic, Close (or the Replace that dropped it) closes the
// others all the same, and then the panic goes on. Close
// also ends the service's [Service.WatchFile] loops, which install
// nothing from then on. A second Close closes nothing, waits as the first
// does, and returns nil.
//
// The service still decides after Close: Allow, Take, TakeWith and the
// others ask the same limiters, closed, which decide as far as they can
// (the in-memory limiters hold nothing to close and decide as before;
// redislimit's stay usable, each call a round trip of its own). A limiter
// the service builds after Close, for rules that Replace or Configure*
// install then, or for a Config that TakeWith first uses then (or while
// Close runs), is closed as soon as it is built, so that none is left
// holding resources.
//
// A nil or zero Service, which [New] did not make (see [Service.Built]),
// holds nothing: Close returns nil, as often as it is called.
func (s *Service) Close() error {
	if !s.Built() {
		return nil // no limiters, no watch loops: s.closed is nil
	}
	// Once mu is released: after s.closed is closed, with mu held, no
	// Replace adds to dropping.
	defer s.dropping.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.overrideMu.Lock()
	if s.isClosed() {
		s.overrideMu.Unlock()
		return nil // every limiter was closed then, or since as it was built
	}
	close(s.closed)
	var lims []hotlimit.Limiter
	for _, lim := range s.rules.Load().limiters {
		lims = append(lims, lim)
	}
	// Every store of overrideLimiters is made with overrideMu held: this
	// lists every limiter stored before, and a limiter stored after sees
	// closed, and is closed by its TakeWith.
	s.overrideLimiters.Range(func(_ hotlimit.Config, lim hotlimit.Limiter) bool {
		lims = append(lims, lim)
		return true
	})
	s.overrideMu.Unlock()
	return closeAll(lims)
}

// Len returns the number of keys held by the limiters, those of the rules
// and those of [Service.TakeWith]: one per pair, user, api or global quota
// that some limit counts and that is not idle (or not yet swept).
func (s *Service) Len() int {
	n := 0
	s.eachLimiter(func(sw sweeper) { n += sw.Len() })
	return n
}

// Sweep evicts idle state from every limiter, those of the rules and those
// of [Service.TakeWith] (see the limiters' Sweep), and returns how many keys
// it evicted. Decisions are the same as without it. The service keeps
// nothing else per pair, so this frees all an idle pair held;
// [hotlimit.WithAutoSweep] does the same without a call.
func (s *Service) Sweep() int {
	n := 0
	s.eachLimiter(func(sw sweeper) { n += sw.Sweep() })
	s.keys.clear()
	return n
}

// eachLimiter calls f on every limiter that holds keys: those of the rules
// in force, then those TakeWith built. They are distinct limiters, even for
// equal Configs, and each is visited once, so no key is visited twice.
func (s *Service) eachLimiter(f func(sweeper)) {
	for _, lim := range s.rules.Load().limiters {
		if sw, ok := lim.(sweeper); ok {
			f(sw)
		}
	}
	s.overrideLimiters.Range(func(_ hotlimit.Config, lim hotlimit.Limiter) bool {
		if sw, ok := lim.(sweeper); ok {
			f(sw)
		}
		return true
	})
}
