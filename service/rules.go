package service

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/hotlimit/hotlimit/internal/ctxend"
)

// rule is one resolved rule of a snapshot: its limits and what enforces them.
// Rules with equal limits share one *rule.
//
// A rule of one limit is its shared limiter (lim) and the scope its key is
// made for; a rule of several limits is a [multi] over the shared limiters.
type rule struct {
	limits Limits
	lim    hotlimit.Limiter
	scope  hotlimit.Scope
	multi  *multi // nil for one limit
	// transient is set when every limiter of the rule copies the keys it
	// keeps (see copiesKeys): keys are then built on the stack (stackKey)
	// or in a pooled keyBuf, else taken from the service's keyCache.
	transient bool

	// name is the rule's path, such as apis["GET /pay"], for the observer.
	// Rules with equal limits share their limiters and multi, but each
	// entry of a snapshot has a rule of its own, named (see named).
	name string
	// sources are the Events' sources when obs is set: sources[i] names the
	// rule and its limit i, in multi's order for several limits.
	sources []*hotlimit.Source
	// obs, when not nil, hears of every decision; near is the near-limit
	// share it classifies them with.
	obs  hotlimit.Observer
	near float64
	// shadowHook, when not nil, hears of every decision that a limit in
	// shadow mode would have denied (see WithShadowHook).
	shadowHook func(user, api string, e hotlimit.Event)
	// defBurst is the service's default burst, for the limits' capacity
	// (see capacity).
	defBurst int
	// slow is set when a decision of one limit must see the limiter's
	// Decision: an observer, or a limit in shadow mode.
	slow bool
	// fast is set for a rule of one limit, not slow, whose limiter copies
	// keys: Allow is then the limiter's Allow under a key on the stack.
	fast bool
	// counted is the limiter of a slow rule of one limit that copies keys,
	// when it reports Remaining with Allow (see remainingAllower): Allow
	// then asks it instead of Take, and skips the durations.
	counted remainingAllower
	// nearMax is the largest Remaining that ClassifyCapacity counts as
	// near the limit of limits[0] under the share near, for counted.
	nearMax int
	// obsFunc is obs when it is a hotlimit.ObserverFunc, called directly
	// by observeAllow: one call and one copy of the Event less.
	obsFunc hotlimit.ObserverFunc
	// waits is set when a limiter of the rule takes a context (one on
	// Redis): only then does takeContext take the context's path, which
	// builds keys in a pooled buffer where take builds them on the stack.
	waits bool
}

// remainingAllower is a limiter that reports, with Allow, the Remaining that
// Take(key, 1) would: all that an observer needs of a decision of Allow (its
// outcome, near the limit or not), without the durations Take computes. The
// in-memory limiters but Unlimited have it.
type remainingAllower interface {
	AllowRemaining(key string) (allowed bool, remaining int)
}

// setFast sets fast and counted from the other fields.
func (ru *rule) setFast() {
	ru.fast = ru.multi == nil && ru.transient && !ru.slow
	if ru.multi == nil {
		_, ru.waits = ru.lim.(hotlimit.ContextTaker)
	} else {
		ru.waits = slices.ContainsFunc(ru.multi.withContext, func(c hotlimit.ContextRefunder) bool { return c != nil })
	}
	ru.counted = nil
	// A limit of 2^53 or more would have counts that float64 rounds, and
	// Classify with them: such a rule is left to Take.
	// A rule of a limit in shadow mode that the shadow hook hears of takes
	// Take's path, which passes the hook the user and api: the counted path
	// of every other observed rule stays as it is.
	heard := ru.shadowHook != nil && ru.limits[0].Shadow
	if ru.multi == nil && ru.transient && ru.slow && !heard && int64(ru.limits[0].Limit) < 1<<53 {
		ru.counted, _ = ru.lim.(remainingAllower)
		ru.nearMax = nearMax(capacity(ru.limits[0], ru.defBurst), ru.near)
		ru.obsFunc, _ = ru.obs.(hotlimit.ObserverFunc)
	}
}

// nearMax returns the largest Remaining that hotlimit.ClassifyCapacity
// counts as near a limit of capacity limit under the share near (float64(r) ≤
// near·float64(limit)), so that r ≤ nearMax decides as it does without
// floating point on the hot path: for an integer r, exact as a float64 (a
// count below 2^53, as setFast ensures), r ≤ x exactly when r ≤ ⌊x⌋. −1 (no Remaining) when
// near·limit is not a number ≥ 0.
func nearMax(limit int, near float64) int {
	x := near * float64(limit)
	switch {
	case !(x >= 0):
		return -1
	case x >= float64(limit): // near ≥ 1; also keeps the conversion in range
		return limit
	}
	return int(math.Floor(x))
}

// named returns a copy of ru named name: it shares ru's limiters and multi.
func (ru *rule) named(name string) *rule {
	c := *ru
	c.name = name
	c.setSources()
	return &c
}

// setSources sets sources from name and the limits, when an observer or the
// shadow hook will see them: the hook only hears of a rule with a limit in
// shadow mode, and a rule without one pays nothing for it.
func (ru *rule) setSources() {
	ru.sources = nil
	limits := ru.limits
	if ru.multi != nil {
		limits = ru.multi.limits
	}
	heard := ru.shadowHook != nil && slices.ContainsFunc(limits, func(c hotlimit.Config) bool { return c.Shadow })
	if ru.obs == nil && !heard {
		return
	}
	ru.sources = make([]*hotlimit.Source, len(limits))
	for i, c := range limits {
		ru.sources[i] = &hotlimit.Source{Rule: ru.name, Policy: burst.Spelled(c, ru.defBurst)}
	}
}

// allow is Take(user, api, 1).Allowed on the fastest path: for a rule of
// one limit whose limiter copies keys, with no observer and no shadow mode,
// the limiter's Allow under a key built on the stack.
func (ru *rule) allow(cache *keyCache, user, api string) bool {
	if ru.fast {
		var sk stackKey
		if k, ok := sk.key(ru.scope, user, api); ok {
			return ru.lim.Allow(k)
		}
	} else if ru.counted != nil {
		var sk stackKey
		if k, ok := sk.key(ru.scope, user, api); ok {
			return ru.observeAllow(ru.counted.AllowRemaining(k))
		}
	}
	return ru.allowSlow(cache, user, api)
}

// allowSlow is allow for the other rules, and for keys too long for a
// stackKey: in a longKey, declared here so that allow's frame does not zero
// it, else in a pooled keyBuf.
func (ru *rule) allowSlow(cache *keyCache, user, api string) bool {
	switch {
	case ru.multi != nil || ru.slow:
		d, _ := ru.take(cache, user, api, 1, false)
		return d.Allowed
	case !ru.transient:
		return ru.lim.Allow(cache.key(ru.scope, user, api))
	}
	var lk longKey
	if k, ok := lk.key(ru.scope, user, api); ok {
		return ru.lim.Allow(k)
	}
	kb := getKeyBuf()
	ok := ru.lim.Allow(kb.key(ru.scope, user, api))
	kb.put()
	return ok
}

// take asks the rule for n requests from user to api, and returns the
// rule's decision and the limit that decided it; for a rule of several
// limits with ownDecision set (TakePolicy), that limit's own decision (see
// several).
func (ru *rule) take(cache *keyCache, user, api string, n int, ownDecision bool) (hotlimit.Decision, hotlimit.Config) {
	if ru.multi == nil {
		if ru.transient {
			var sk stackKey
			if k, ok := sk.key(ru.scope, user, api); ok {
				return ru.one(ru.lim.Take(k, n), n, user, api)
			}
			var lk longKey
			if k, ok := lk.key(ru.scope, user, api); ok {
				return ru.one(ru.lim.Take(k, n), n, user, api)
			}
			kb := getKeyBuf()
			defer kb.put()
			return ru.one(ru.lim.Take(kb.key(ru.scope, user, api), n), n, user, api)
		}
		return ru.one(ru.lim.Take(cache.key(ru.scope, user, api), n), n, user, api)
	}
	return ru.takeSeveral(cache, user, api, n, ownDecision)
}

// takeSeveral is take for a rule of several limits; ownDecision as in
// several.
func (ru *rule) takeSeveral(cache *keyCache, user, api string, n int, ownDecision bool) (hotlimit.Decision, hotlimit.Config) {
	var kb *keyBuf
	if ru.transient {
		kb = getKeyBuf()
		defer kb.put()
	}
	//lint:ignore SA1012 nil: decided without a context, as Take is
	d, i, own, shadow, _ := ru.multi.take(nil, keys{cache: cache, buf: kb, user: user, api: api}, n, nil, nil)
	return ru.several(d, i, own, shadow, n, ownDecision, user, api)
}

// observeAllow finishes a decision of Allow that the limiter reported with
// AllowRemaining, as one does for n = 1, and returns whether the caller
// passes. The outcome is ClassifyCapacity's: nearMax is its threshold on
// Remaining. The shadow hook is not called here: a rule it hears of takes
// Take's path (see setFast).
func (ru *rule) observeAllow(allowed bool, remaining int) bool {
	outcome, passes := hotlimit.OutcomeAllowed, allowed
	switch {
	case allowed && remaining > ru.nearMax:
	case allowed:
		outcome = hotlimit.OutcomeNearLimit
	case ru.limits[0].Shadow:
		outcome, passes = hotlimit.OutcomeShadowDenied, true
	default:
		outcome = hotlimit.OutcomeDenied
	}
	if ru.obs == nil {
		return passes
	}
	src := ru.sources[0]
	e := hotlimit.Event{Source: src, Outcome: outcome, N: 1,
		Decision: hotlimit.Decision{Allowed: passes, Limit: src.Policy.Limit, Remaining: remaining}}
	if ru.obsFunc != nil {
		ru.obsFunc(e)
	} else {
		ru.obs.Observe(e)
	}
	return passes
}

// one finishes the decision d of a rule of one limit on n requests from user
// to api: a limit in shadow mode lets a denied request pass (n ≥ 1: a
// negative n stays the caller's bug), and the observer and the shadow hook
// hear of it.
func (ru *rule) one(d hotlimit.Decision, n int, user, api string) (hotlimit.Decision, hotlimit.Config) {
	shadowDenied := ru.limits[0].Shadow && !d.Allowed && n >= 1
	outcome := hotlimit.ClassifyCapacity(d, shadowDenied, ru.near, capacity(ru.limits[0], ru.defBurst))
	if shadowDenied {
		d.Allowed, d.RetryAfter = true, 0
	}
	hook := shadowDenied && ru.shadowHook != nil
	if ru.obs != nil || hook {
		e := hotlimit.Event{Source: ru.sources[0], Outcome: outcome, N: n, Decision: d}
		if ru.obs != nil {
			ru.obs.Observe(e)
		}
		if hook {
			ru.shadowHook(user, api, e)
		}
	}
	return d, burst.Spelled(ru.limits[0], ru.defBurst)
}

// several finishes the decision d of a rule of several limits on n requests
// from user to api: decider is the limit that decided and own its own decision, shadow the
// first limit in shadow mode that would have denied it, or -1. The outcome
// is the decider's: near the limit when its own Remaining is at most the
// near-limit share of its own capacity, which, as the decider is the limit
// with the least share of its capacity left, is when any limit is (of
// those not in shadow mode, unless every limit is, and of those that
// decided, unless none did: a failure policy's numbers count nothing; see
// multi.take). d's
// Remaining, the least of the limits', may be another limit's, of another
// capacity, and would misclassify.
//
// It returns d, the rule's decision, or, when ownDecision is set (for
// TakePolicy), the decider's own Limit, Remaining and ResetAfter under d's
// Allowed and RetryAfter, so that the decision describes the limit returned
// with it. The observer hears of d either way, and the shadow hook when a
// limit in shadow mode would have denied a request that passed.
func (ru *rule) several(d hotlimit.Decision, decider int, own hotlimit.Decision, shadow, n int, ownDecision bool, user, api string) (hotlimit.Decision, hotlimit.Config) {
	hook := d.Allowed && shadow >= 0 && ru.shadowHook != nil
	if ru.obs != nil || hook {
		cd := d
		cd.Remaining = own.Remaining
		outcome := hotlimit.ClassifyCapacity(cd, false, ru.near, capacity(ru.multi.limits[decider], ru.defBurst))
		e := hotlimit.Event{Source: ru.sources[decider], Outcome: outcome, N: n, Decision: d}
		if d.Allowed && shadow >= 0 {
			e.Source, e.Outcome = ru.sources[shadow], hotlimit.OutcomeShadowDenied
		}
		if ru.obs != nil {
			ru.obs.Observe(e)
		}
		if hook {
			ru.shadowHook(user, api, e)
		}
	}
	if ownDecision {
		d.Limit, d.Remaining, d.ResetAfter = own.Limit, own.Remaining, own.ResetAfter
	}
	return d, burst.Spelled(ru.multi.limits[decider], ru.defBurst)
}

// takeContext is take under ctx, for the limiters that take a context (see
// hotlimit.ContextTaker); the others decide as take does. ownDecision is
// several's: set, it is takePolicy under ctx.
func (ru *rule) takeContext(ctx context.Context, cache *keyCache, user, api string, n int, ownDecision bool) (hotlimit.Decision, hotlimit.Config, error) {
	if !ru.waits {
		d, c := ru.take(cache, user, api, n, ownDecision)
		return d, c, nil
	}
	var kb *keyBuf
	if ru.transient {
		kb = getKeyBuf()
		defer kb.put()
	}
	k := keys{cache: cache, buf: kb, user: user, api: api}
	if ru.multi == nil {
		key := k.of(ru.scope)
		if ct, ok := ru.lim.(hotlimit.ContextTaker); ok {
			d, err := ct.TakeContext(ctx, key, n)
			d, c := ru.one(d, n, k.user, k.api)
			if err != nil && d.Allowed {
				err = endedUndecided(ctx, err)
			}
			return d, c, err
		}
		d, c := ru.one(ru.lim.Take(key, n), n, k.user, k.api)
		return d, c, nil
	}
	d, i, own, shadow, err := ru.multi.take(ctx, k, n, nil, nil)
	d, c := ru.several(d, i, own, shadow, n, ownDecision, k.user, k.api)
	return d, c, err
}

// endedUndecided returns err, the error of a rule's one limit that could not
// decide and passed a request by its failure policy, joined with one that
// wraps ctx's when ctx has ended (past its deadline included, see
// ctxend.Err), as a rule of several limits says so (see multi.take): the
// limiter's own error need not wrap it (a socket's "i/o timeout" at the
// caller's deadline does not), and the gateways, which read the error, do
// not serve a request that ended while its limit could not decide. There
// is nothing to give back: the limit counted nothing, or, by a failure
// policy that counts in memory (redislimit's FailLocal), keeps its count.
func endedUndecided(ctx context.Context, err error) error {
	ended := ctxend.Err(ctx)
	if ended == nil || errors.Is(err, ended) {
		return err
	}
	return errors.Join(err, fmt.Errorf("the request ended while its limit could not decide: %w", ended))
}

// rules is an immutable snapshot of the policies and their limiters. It is
// never modified after it is published; Replace and Configure* publish a new
// one built by build.
type rules struct {
	def   *rule
	users map[string]*rule
	apis  map[string]*rule
	pairs map[Pair]*rule
	// limiters holds one limiter per distinct Config some rule uses, keyed
	// by unscoped's Config (without its scope, which only chooses the key,
	// its shadow mode, and a burst that only spells out the limit); each
	// rule is built from these, so all rules naming a Config share its state.
	limiters map[hotlimit.Config]hotlimit.Limiter
	// Whether pairs, apis and users hold any rule: read beside def, so that
	// a snapshot without overrides of a kind never touches their maps.
	hasPairs, hasAPIs, hasUsers bool
}

// resolve returns the rule of (user, api), most specific first. It only reads
// plain maps of an immutable snapshot, so it needs no lock, and skips the
// override maps that are empty.
func (r *rules) resolve(user, api string) *rule {
	if r.hasPairs {
		if ru, ok := r.pairs[Pair{user, api}]; ok {
			return ru
		}
	}
	if r.hasAPIs {
		if ru, ok := r.apis[api]; ok {
			return ru
		}
	}
	if r.hasUsers {
		if ru, ok := r.users[user]; ok {
			return ru
		}
	}
	return r.def
}

// export returns the snapshot's rules as a Rules value the caller owns.
func (r *rules) export() Rules {
	out := Rules{Default: slices.Clone(r.def.limits)}
	out.Users = exportRules(r.users)
	out.APIs = exportRules(r.apis)
	out.Pairs = exportRules(r.pairs)
	return out
}

// exportRules copies the limits of m, or returns nil when m is empty.
func exportRules[K comparable](m map[K]*rule) map[K]Limits {
	if len(m) == 0 {
		return nil
	}
	out := make(map[K]Limits, len(m))
	for k, ru := range m {
		out[k] = slices.Clone(ru.limits)
	}
	return out
}

// build returns the snapshot of rs. It reuses prev's limiter of every Config
// prev already has, so that pairs keep their state, and prev's rule of every
// list of limits prev already has; it builds the others with opts. The
// snapshot holds only the limiters its rules use. prev may be nil. On error
// (rs invalid, or a limiter rejecting its Config) nothing is published and
// the error names the entry; then, and when a factory panics (the panic goes
// on to the caller), the limiters built are closed.
func build(rs Rules, prev *rules, opts []hotlimit.Option) (*rules, error) {
	o := hotlimit.NewOptions(opts...)
	next := &rules{limiters: map[hotlimit.Config]hotlimit.Limiter{}}
	byLimits := map[string]*rule{} // rules of this snapshot, by limitsKey
	reuse := map[string]*rule{}    // rules of prev, by limitsKey
	var built []hotlimit.Limiter   // the limiters made here, not taken from prev
	handedOver := false            // next, holding built, is returned
	defer func() {
		// Rules that do not build, with an error or a factory's panic,
		// publish none of the limiters made for them: closed here.
		if !handedOver {
			_ = closeAll(built)
		}
	}()
	if prev != nil {
		for _, ru := range prev.all() {
			reuse[limitsKey(ru.limits)] = ru
		}
	}
	err := rs.each(func(path string, ls Limits) error {
		key := limitsKey(ls)
		if _, ok := byLimits[key]; ok {
			return nil
		}
		// each rejected the copies of a limit whatever the service's
		// burst; a limit with the burst a limit of no burst takes spelled
		// out (its limit, or the service's burst when it has one) is a
		// copy of the limit without it too: the limits as they are built.
		for i, c := range ls {
			same := func(p hotlimit.Config) bool {
				return p.Scope == c.Scope && unscoped(p, o.Burst) == unscoped(c, o.Burst)
			}
			if j := slices.IndexFunc(ls[:i], same); j >= 0 {
				return repeatedLimit(path, ls, i, j, o.Burst)
			}
		}
		if ru, ok := reuse[key]; ok {
			// Same limits as before: same children, same combination.
			for _, c := range ls {
				next.limiters[unscoped(c, o.Burst)] = prev.limiters[unscoped(c, o.Burst)]
			}
			byLimits[key] = ru
			return nil
		}
		children := make([]hotlimit.Limiter, len(ls))
		for i, c := range ls {
			u := unscoped(c, o.Burst)
			lim, ok := next.limiters[u]
			if !ok && prev != nil {
				lim, ok = prev.limiters[u]
			}
			if !ok {
				var err error
				if lim, err = newLimiter(u, opts...); err != nil {
					return fmt.Errorf("service: %s[%d]: %w", path, i, err)
				}
				built = append(built, lim)
			}
			next.limiters[u] = lim
			children[i] = lim
		}
		ru := &rule{limits: slices.Clone(ls), lim: children[0], scope: ls[0].Scope, transient: true,
			obs: o.Observer, shadowHook: shadowHookOf(o), near: o.NearLimit, defBurst: o.Burst, slow: o.Observer != nil || ls[0].Shadow}
		for _, c := range children {
			ru.transient = ru.transient && copiesKeys(c)
		}
		if len(ls) > 1 {
			m, err := newMulti(ru.limits, children, o.Burst)
			if err != nil {
				return fmt.Errorf("service: %s%w", path, err)
			}
			ru.lim, ru.multi = nil, m
		}
		ru.setFast()
		byLimits[key] = ru
		return nil
	})
	if err != nil {
		return nil, err
	}
	next.def = byLimits[limitsKey(rs.Default)].named("default")
	// Names whole, not clipped as errors quote them: they tell rules apart.
	next.users = resolveRules(rs.Users, byLimits, func(u string) string { return "users[" + strconv.Quote(u) + "]" })
	next.apis = resolveRules(rs.APIs, byLimits, func(a string) string { return "apis[" + strconv.Quote(a) + "]" })
	next.pairs = resolveRules(rs.Pairs, byLimits, pairName)
	next.hasPairs, next.hasAPIs, next.hasUsers = len(next.pairs) > 0, len(next.apis) > 0, len(next.users) > 0
	handedOver = true
	return next, nil
}

// closeAll closes the limiters of lims that hold resources (implement
// io.Closer) and returns their errors joined. Should one's Close panic, the
// ones after it are closed all the same, and then the panic goes on: a
// factory's limiter that fails so leaves no other holding its resources.
// build closes with it the limiters it made for rules it does not publish,
// which no decision has seen, so that rules failing to build (a backend
// unreachable while WatchFile tries them again at every check) leave no
// limiter holding resources behind; Replace, the ones it dropped; Close,
// every one.
func closeAll(lims []hotlimit.Limiter) error {
	i := 0
	defer func() {
		if i < len(lims) { // the i-th Close panicked
			_ = closeAll(lims[i+1:])
		}
	}()
	var errs []error
	for ; i < len(lims); i++ {
		if c, ok := lims[i].(io.Closer); ok {
			errs = appendErr(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// unscoped returns c with the scope PerPair and no shadow mode: the Config
// of the limiter that enforces c. The scope is the service's business: it
// chooses the key, and the keys of different scopes never collide (see
// stateKey); shadow mode only changes what the caller is told. So limits
// that differ only in scope or shadow mode share one limiter, and turning a
// limit's shadow mode off keeps its state.
//
// A burst that is the one a burst of 0 stands for comes back as 0: the
// limit when the service's options set no burst (defBurst,
// [hotlimit.Options].Burst, is 0), else defBurst. A limit whose burst is
// spelled out and the same limit without it share one limiter, so a Replace
// that only spells it out (as TakePolicy and the observer's Policy spell
// out the service's burst), or drops it, keeps every key's state.
func unscoped(c hotlimit.Config, defBurst int) hotlimit.Config {
	c.Scope = hotlimit.PerPair
	c.Shadow = false
	return burst.Unspelled(c, defBurst)
}

// sameLimit reports whether a and b count under one key of one limiter (see
// unscoped) whatever the service's burst: they differ at most in shadow
// mode. A rule may not hold both (see Rules.each).
func sameLimit(a, b hotlimit.Config) bool {
	a.Shadow, b.Shadow = false, false
	return a == b
}

// resolveRules maps each rule of m to its built rule, named by name.
func resolveRules[K comparable](m map[K]Limits, byLimits map[string]*rule, name func(K) string) map[K]*rule {
	if len(m) == 0 {
		return nil
	}
	out := make(map[K]*rule, len(m))
	for k, ls := range m {
		out[k] = byLimits[limitsKey(ls)].named(name(k))
	}
	return out
}

// all returns every rule of r, with repetitions.
func (r *rules) all() []*rule {
	out := make([]*rule, 0, 1+len(r.users)+len(r.apis)+len(r.pairs))
	out = append(out, r.def)
	for _, m := range []map[string]*rule{r.users, r.apis} {
		for _, ru := range m {
			out = append(out, ru)
		}
	}
	for _, ru := range r.pairs {
		out = append(out, ru)
	}
	return out
}

// limitsKey encodes ls injectively, in order: each Config as its algorithm,
// scope and shadow bytes and three varints.
func limitsKey(ls Limits) string {
	b := make([]byte, 0, len(ls)*16)
	for _, c := range ls {
		shadow := byte(0)
		if c.Shadow {
			shadow = 1
		}
		b = append(b, byte(c.Algorithm), byte(c.Scope), shadow)
		b = binary.AppendVarint(b, int64(c.Limit))
		b = binary.AppendVarint(b, int64(c.Window))
		b = binary.AppendVarint(b, int64(c.Burst))
	}
	return string(b)
}

// The keys of the scopes other than PerPair. A pair key starts with a digit,
// these with a letter, so no key of one scope is a key of another.
const (
	userKeyPrefix = "user|"
	apiKeyPrefix  = "api|"
	globalKey     = "global"
)

// stateKey is the key a limit of the given scope counts a request from user to
// api under: the pair key, "user|" and the user, "api|" and the api, or
// "global". Keys are printable when the names are, and injective: two
// requests share a key exactly when the scope says they share a quota.
func stateKey(scope hotlimit.Scope, user, api string) string {
	switch scope {
	case hotlimit.PerUser:
		return userKeyPrefix + user
	case hotlimit.PerAPI:
		return apiKeyPrefix + api
	case hotlimit.Global:
		return globalKey
	}
	return pairKey(user, api)
}

// pairKey encodes (user, api) injectively and readably: the length of user in
// decimal, a colon, user, a bar, then api, as in "3:zed|GET /pay". The length
// says where user ends, so two distinct pairs never share a key whatever bytes
// their names contain, and an operator reading the key in a log or in
// `redis-cli --scan` sees both names.
func pairKey(user, api string) string {
	var b strings.Builder
	b.Grow(decimalLen(len(user)) + 2 + len(user) + len(api))
	var digits [20]byte
	b.Write(strconv.AppendUint(digits[:0], uint64(len(user)), 10))
	b.WriteByte(':')
	b.WriteString(user)
	b.WriteByte('|')
	b.WriteString(api)
	return b.String()
}

// decimalLen is the number of decimal digits of n ≥ 0.
func decimalLen(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// takeEach is takeContext with ownDecision set, and also appends to dst
// every limit of the rule with its own decision (see [Service.TakeEach]);
// it returns the rule's decision.
func (ru *rule) takeEach(ctx context.Context, cache *keyCache, user, api string, n int, dst []LimitDecision) (hotlimit.Decision, []LimitDecision, error) {
	if ru.multi == nil {
		if !ru.waits { // as takeContext decides, one call shorter
			d, c := ru.take(cache, user, api, n, false)
			return d, append(dst, LimitDecision{Config: c, Decision: d}), nil
		}
		d, c, err := ru.takeContext(ctx, cache, user, api, n, false)
		return d, append(dst, LimitDecision{Config: c, Decision: d, Err: composite.DecidingError(err)}), err
	}
	var kb *keyBuf
	if ru.transient {
		kb = getKeyBuf()
		defer kb.put()
	}
	if !ru.waits {
		ctx = nil // no limiter takes it: decide as take does
	}
	var each [composite.MaxChildren]hotlimit.Decision
	d, i, own, shadow, err := ru.multi.take(ctx, keys{cache: cache, buf: kb, user: user, api: api}, n, &each, nil)
	var errOf [composite.MaxChildren]error
	if err != nil {
		limitErrors(err, &errOf)
	}
	pd, c := ru.several(d, i, own, shadow, n, true, user, api)
	dst = append(dst, LimitDecision{Config: c, Decision: pd, Err: errOf[i]})
	allShadow := !slices.ContainsFunc(ru.multi.limits, func(c hotlimit.Config) bool { return !c.Shadow })
	for j, c := range ru.multi.limits {
		if j == i || c.Shadow && !allShadow {
			continue
		}
		jd := each[j]
		jd.Allowed, jd.RetryAfter = d.Allowed, d.RetryAfter
		dst = append(dst, LimitDecision{Config: burst.Spelled(c, ru.defBurst), Decision: jd, Err: errOf[j]})
	}
	return d, dst, err
}
