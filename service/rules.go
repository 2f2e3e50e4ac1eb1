package service

import (
	"encoding/binary"
	"maps"

	"github.com/hotlimit/hotlimit"
)

// pair is a (user, api) request identity.
type pair struct{ user, api string }

// rules is an immutable snapshot of the policies and their limiters. It is
// never modified after it is published; Configure* publishes a changed copy.
type rules struct {
	def      hotlimit.Config
	users    map[string]hotlimit.Config
	apis     map[string]hotlimit.Config
	pairs    map[pair]hotlimit.Config
	limiters map[hotlimit.Config]hotlimit.Limiter
}

// resolve returns the policy of (user, api), most specific first.
func (r *rules) resolve(user, api string) hotlimit.Config {
	if c, ok := r.pairs[pair{user, api}]; ok {
		return c
	}
	if c, ok := r.apis[api]; ok {
		return c
	}
	if c, ok := r.users[user]; ok {
		return c
	}
	return r.def
}

// clone returns a deep copy of the rule maps, sharing the limiters.
func (r *rules) clone() *rules {
	return &rules{
		def:      r.def,
		users:    maps.Clone(r.users),
		apis:     maps.Clone(r.apis),
		pairs:    maps.Clone(r.pairs),
		limiters: maps.Clone(r.limiters),
	}
}

// used returns the set of configs some rule names.
func (r *rules) used() map[hotlimit.Config]bool {
	used := map[hotlimit.Config]bool{r.def: true}
	for _, m := range []map[string]hotlimit.Config{r.users, r.apis} {
		for _, c := range m {
			used[c] = true
		}
	}
	for _, c := range r.pairs {
		used[c] = true
	}
	return used
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
