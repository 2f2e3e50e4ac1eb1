package service

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/puzpuzpuz/xsync/v3"
)

// Service decides allow(user, api) under a default policy and per-user,
// per-API and per-pair overrides. The zero value is not usable; call [New].
// A Service is safe for concurrent use: Allow and Take never lock, and may run
// concurrently with Replace, Configure* and WatchFile.
type Service struct {
	opts []hotlimit.Option

	// mu serialises writers of rules; Allow and Take never take it.
	mu sync.Mutex
	// rules is the current snapshot: loaded by anyone, stored only with mu
	// held (one Store per Replace or Configure*), and never modified once
	// stored.
	rules atomic.Pointer[rules]

	// routes caches each pair's resolved limiter and key. An entry is valid
	// only for the snapshot it was resolved against; a stale one is replaced
	// on use. It is a cache: deleting an entry loses no state.
	routes *xsync.MapOf[Pair, *route]
}

// route is a pair's resolved limiter, valid for one rules snapshot.
type route struct {
	rules  *rules
	lim    hotlimit.Limiter
	key    string
	policy hotlimit.Config // the rule's first limit, as Resolve returns it
}

var routeSeed = maphash.MakeSeed()

// hashPair hashes both names; xsync's per-table seed is mixed in.
func hashPair(p Pair, seed uint64) uint64 {
	h := maphash.String(routeSeed, p.User)
	h = h*0x9e3779b97f4a7c15 ^ maphash.String(routeSeed, p.API)
	return h ^ seed
}

// New returns a Service whose default policy is def. opts (a clock, auto-sweep)
// apply to every limiter the service builds; [hotlimit.WithFactory] replaces
// the in-memory limiters, with redislimit.Factory say, so that many instances
// share one state. It returns an error wrapping
// hotlimit.ErrInvalidConfig when def is invalid.
func New(def hotlimit.Config, opts ...hotlimit.Option) (*Service, error) {
	return NewFromRules(Rules{Default: Limits{def}}, opts...)
}

// NewFromRules returns a Service enforcing rules. opts (a clock, auto-sweep)
// apply to every limiter the service builds. It returns an error naming the
// offending entry and wrapping hotlimit.ErrInvalidConfig when rules are
// invalid (see [Rules.Validate]).
func NewFromRules(rules Rules, opts ...hotlimit.Option) (*Service, error) {
	snap, err := build(rules, nil, opts)
	if err != nil {
		return nil, err
	}
	s := &Service{
		opts:   opts,
		routes: xsync.NewMapOfWithHasher[Pair, *route](hashPair),
	}
	s.rules.Store(snap)
	return s, nil
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
// one limiter per distinct Config and reuses it; limiters no rule uses any
// more are dropped with their state. On error (see [Rules.Validate]) nothing
// changes.
func (s *Service) Replace(rules Rules) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replaceLocked(rules)
}

// replaceLocked builds and publishes the snapshot of rules; s.mu is held.
func (s *Service) replaceLocked(rules Rules) error {
	next, err := build(rules, s.rules.Load(), s.opts)
	if err != nil {
		return err
	}
	s.rules.Store(next)
	return nil
}

// ConfigureUser sets the policy of every request from user, below API and
// pair overrides, to the single limit c. On error nothing changes.
func (s *Service) ConfigureUser(user string, c hotlimit.Config) error {
	return s.configure(func(r *Rules) { r.Users = set(r.Users, user, c) })
}

// ConfigureAPI sets the policy of every request to api, below pair overrides
// and above user overrides, to the single limit c. On error nothing changes.
func (s *Service) ConfigureAPI(api string, c hotlimit.Config) error {
	return s.configure(func(r *Rules) { r.APIs = set(r.APIs, api, c) })
}

// ConfigureUserAPI sets the policy of requests from user to api, above every
// other rule, to the single limit c. On error nothing changes.
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

// configure replaces the rules by a copy changed by change, as one Replace.
func (s *Service) configure(change func(*Rules)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.rules.Load().export()
	change(&next)
	return s.replaceLocked(next)
}

// Resolve returns the policy that applies to requests from user to api: the
// first limit of the pair's rule, the only one unless the rule has several
// (see [Service.ResolveLimits]).
func (s *Service) Resolve(user, api string) hotlimit.Config {
	return s.rules.Load().resolve(user, api).limits[0]
}

// ResolveLimits returns every limit of the rule that applies to requests from
// user to api, as a slice the caller owns.
func (s *Service) ResolveLimits(user, api string) Limits {
	return slices.Clone(s.rules.Load().resolve(user, api).limits)
}

// TakePolicy is Take, plus the policy that decided it: the pair's Config as
// Resolve returns it (the first limit of its rule), from the same rules as
// the decision, so a Replace or Configure* landing meanwhile cannot make the
// two disagree. It allocates nothing for a pair seen before under the current
// rules.
func (s *Service) TakePolicy(user, api string, n int) (hotlimit.Decision, hotlimit.Config) {
	rt := s.route(user, api)
	return rt.lim.Take(rt.key, n), rt.policy
}

// Allow reports whether one request from user to api passes, and counts it if
// so. It allocates nothing for a pair seen before under the current rules.
func (s *Service) Allow(user, api string) bool {
	rt := s.route(user, api)
	return rt.lim.Allow(rt.key)
}

// Take asks for n requests from user to api at once, under the pair's policy;
// see hotlimit.Limiter. Under a rule of several limits, all n pass every
// limit or none is counted by any, and the Decision is the most restrictive
// of the limits' (see package composite); the limits are asked in the rule's
// order, sliding logs last.
func (s *Service) Take(user, api string, n int) hotlimit.Decision {
	rt := s.route(user, api)
	return rt.lim.Take(rt.key, n)
}

// route returns the pair's route under the current snapshot: one lock-free map
// load when cached, else resolved and cached.
func (s *Service) route(user, api string) *route {
	r := s.rules.Load()
	if rt, ok := s.routes.Load(Pair{user, api}); ok && rt.rules == r {
		return rt
	}
	rule := r.resolve(user, api)
	rt := &route{rules: r, lim: rule.lim, key: pairKey(user, api), policy: rule.limits[0]}
	s.routes.Store(Pair{user, api}, rt)
	return rt
}

// Len returns the number of (limiter, pair) states held.
func (s *Service) Len() int {
	n := 0
	for _, lim := range s.rules.Load().limiters {
		if sw, ok := lim.(sweeper); ok {
			n += sw.Len()
		}
	}
	return n
}

// Sweep evicts idle state from every limiter (see the limiters' Sweep) and
// forgets cached routes of idle pairs and of past rules. It returns how many
// limiter states it evicted. Decisions are the same as without it.
func (s *Service) Sweep() int {
	r := s.rules.Load()
	n := 0
	for _, lim := range r.limiters {
		if sw, ok := lim.(sweeper); ok {
			n += sw.Sweep()
		}
	}
	s.routes.Range(func(p Pair, rt *route) bool {
		if rt.rules != r || isFresh(rt.lim.Take(rt.key, 0)) {
			s.routes.Compute(p, func(old *route, loaded bool) (*route, bool) {
				return old, !loaded || old == rt
			})
		}
		return true
	})
	return n
}

// isFresh reports whether a report (Take with n = 0) shows a full quota.
func isFresh(d hotlimit.Decision) bool {
	return d.Remaining == d.Limit && d.ResetAfter == 0
}
