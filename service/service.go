package service

import (
	"fmt"
	"hash/maphash"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/puzpuzpuz/xsync/v3"
)

// Service decides allow(user, api) under a default policy and per-user,
// per-API and per-pair overrides. The zero value is not usable; call [New].
// A Service is safe for concurrent use: Allow and Take never lock, and may run
// concurrently with Configure*.
type Service struct {
	opts []hotlimit.Option

	// mu serialises writers of rules; Allow and Take never take it.
	mu sync.Mutex
	// rules is the current snapshot: loaded by anyone, stored only with mu
	// held, and never modified once stored.
	rules atomic.Pointer[rules]

	// routes caches each pair's resolved limiter and key. An entry is valid
	// only for the snapshot it was resolved against; a stale one is replaced
	// on use. It is a cache: deleting an entry loses no state.
	routes *xsync.MapOf[pair, *route]
}

// route is a pair's resolved limiter, valid for one rules snapshot.
type route struct {
	rules *rules
	lim   hotlimit.Limiter
	key   string
}

var routeSeed = maphash.MakeSeed()

// hashPair hashes both names; xsync's per-table seed is mixed in.
func hashPair(p pair, seed uint64) uint64 {
	h := maphash.String(routeSeed, p.user)
	h = h*0x9e3779b97f4a7c15 ^ maphash.String(routeSeed, p.api)
	return h ^ seed
}

// New returns a Service whose default policy is def. opts (a clock, auto-sweep)
// apply to every limiter the service builds. It returns an error wrapping
// hotlimit.ErrInvalidConfig when def is invalid.
func New(def hotlimit.Config, opts ...hotlimit.Option) (*Service, error) {
	lim, err := NewLimiter(def, opts...)
	if err != nil {
		return nil, fmt.Errorf("service: default policy: %w", err)
	}
	s := &Service{
		opts:   opts,
		routes: xsync.NewMapOfWithHasher[pair, *route](hashPair),
	}
	s.rules.Store(&rules{
		def:      def,
		users:    map[string]hotlimit.Config{},
		apis:     map[string]hotlimit.Config{},
		pairs:    map[pair]hotlimit.Config{},
		limiters: map[hotlimit.Config]hotlimit.Limiter{def: lim},
	})
	return s, nil
}

// ConfigureUser sets the policy of every request from user, below API and
// pair overrides. On error nothing changes.
func (s *Service) ConfigureUser(user string, c hotlimit.Config) error {
	return s.configure(c, func(r *rules) { r.users[user] = c })
}

// ConfigureAPI sets the policy of every request to api, below pair overrides
// and above user overrides. On error nothing changes.
func (s *Service) ConfigureAPI(api string, c hotlimit.Config) error {
	return s.configure(c, func(r *rules) { r.apis[api] = c })
}

// ConfigureUserAPI sets the policy of requests from user to api, above every
// other rule. On error nothing changes.
func (s *Service) ConfigureUserAPI(user, api string, c hotlimit.Config) error {
	return s.configure(c, func(r *rules) { r.pairs[pair{user, api}] = c })
}

// configure publishes a copy of the rules changed by set, building c's limiter
// if no rule used c yet, and dropping limiters no rule uses any more. Pairs
// whose policy is unchanged keep their state: they keep their limiter.
func (s *Service) configure(c hotlimit.Config, set func(*rules)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.rules.Load().clone()
	if _, ok := next.limiters[c]; !ok {
		lim, err := NewLimiter(c, s.opts...)
		if err != nil {
			return err
		}
		next.limiters[c] = lim
	}
	set(next)
	used := next.used()
	maps.DeleteFunc(next.limiters, func(c hotlimit.Config, _ hotlimit.Limiter) bool { return !used[c] })
	s.rules.Store(next)
	return nil
}

// Resolve returns the policy that applies to requests from user to api.
func (s *Service) Resolve(user, api string) hotlimit.Config {
	return s.rules.Load().resolve(user, api)
}

// Allow reports whether one request from user to api passes, and counts it if
// so. It allocates nothing for a pair seen before under the current rules.
func (s *Service) Allow(user, api string) bool {
	rt := s.route(user, api)
	return rt.lim.Allow(rt.key)
}

// Take asks for n requests from user to api at once, under the pair's policy;
// see hotlimit.Limiter.
func (s *Service) Take(user, api string, n int) hotlimit.Decision {
	rt := s.route(user, api)
	return rt.lim.Take(rt.key, n)
}

// route returns the pair's route under the current snapshot: one lock-free map
// load when cached, else resolved and cached.
func (s *Service) route(user, api string) *route {
	r := s.rules.Load()
	if rt, ok := s.routes.Load(pair{user, api}); ok && rt.rules == r {
		return rt
	}
	rt := &route{rules: r, lim: r.limiters[r.resolve(user, api)], key: pairKey(user, api)}
	s.routes.Store(pair{user, api}, rt)
	return rt
}

// Len returns the number of (limiter, pair) states held.
func (s *Service) Len() int {
	n := 0
	for _, lim := range s.rules.Load().limiters {
		n += lim.(sweeper).Len()
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
		n += lim.(sweeper).Sweep()
	}
	s.routes.Range(func(p pair, rt *route) bool {
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
