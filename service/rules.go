package service

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/hotlimit/hotlimit"
)

// rule is one resolved rule of a snapshot: its limits and the limiter that
// enforces all of them (the one shared limiter of a single limit, or their
// combination). Rules with equal limits share one *rule.
type rule struct {
	limits Limits
	lim    hotlimit.Limiter
}

// rules is an immutable snapshot of the policies and their limiters. It is
// never modified after it is published; Replace and Configure* publish a new
// one built by build.
type rules struct {
	def   *rule
	users map[string]*rule
	apis  map[string]*rule
	pairs map[Pair]*rule
	// limiters holds one limiter per distinct Config some rule uses; each
	// rule's limiter is built from these, so all rules naming a Config share
	// its state.
	limiters map[hotlimit.Config]hotlimit.Limiter
}

// resolve returns the rule of (user, api), most specific first.
func (r *rules) resolve(user, api string) *rule {
	if ru, ok := r.pairs[Pair{user, api}]; ok {
		return ru
	}
	if ru, ok := r.apis[api]; ok {
		return ru
	}
	if ru, ok := r.users[user]; ok {
		return ru
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
// the error names the entry.
func build(rs Rules, prev *rules, opts []hotlimit.Option) (*rules, error) {
	next := &rules{limiters: map[hotlimit.Config]hotlimit.Limiter{}}
	byLimits := map[string]*rule{} // rules of this snapshot, by limitsKey
	reuse := map[string]*rule{}    // rules of prev, by limitsKey
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
		if ru, ok := reuse[key]; ok {
			// Same limits as before: same children, same combination.
			for _, c := range ls {
				next.limiters[c] = prev.limiters[c]
			}
			byLimits[key] = ru
			return nil
		}
		children := make([]hotlimit.Limiter, len(ls))
		for i, c := range ls {
			lim, ok := next.limiters[c]
			if !ok && prev != nil {
				lim, ok = prev.limiters[c]
			}
			if !ok {
				var err error
				if lim, err = newLimiter(c, opts...); err != nil {
					return fmt.Errorf("service: %s[%d]: %w", path, i, err)
				}
			}
			next.limiters[c] = lim
			children[i] = lim
		}
		lim, err := combine(children)
		if err != nil {
			return fmt.Errorf("service: %s: %w", path, err)
		}
		byLimits[key] = &rule{limits: slices.Clone(ls), lim: lim}
		return nil
	})
	if err != nil {
		return nil, err
	}
	next.def = byLimits[limitsKey(rs.Default)]
	next.users = resolveRules(rs.Users, byLimits)
	next.apis = resolveRules(rs.APIs, byLimits)
	next.pairs = resolveRules(rs.Pairs, byLimits)
	return next, nil
}

// resolveRules maps each rule of m to its built rule.
func resolveRules[K comparable](m map[K]Limits, byLimits map[string]*rule) map[K]*rule {
	out := make(map[K]*rule, len(m))
	for k, ls := range m {
		out[k] = byLimits[limitsKey(ls)]
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

// limitsKey encodes ls injectively, in order: each Config as its algorithm
// byte and three varints.
func limitsKey(ls Limits) string {
	b := make([]byte, 0, len(ls)*16)
	for _, c := range ls {
		b = append(b, byte(c.Algorithm))
		b = binary.AppendVarint(b, int64(c.Limit))
		b = binary.AppendVarint(b, int64(c.Window))
		b = binary.AppendVarint(b, int64(c.Burst))
	}
	return string(b)
}

// pairKey encodes (user, api) injectively: the length of user as a uvarint,
// then user, then api. Two distinct pairs never share a key, whatever bytes
// their names contain.
func pairKey(user, api string) string {
	b := make([]byte, 0, binary.MaxVarintLen64+len(user)+len(api))
	b = binary.AppendUvarint(b, uint64(len(user)))
	b = append(b, user...)
	b = append(b, api...)
	return string(b)
}
