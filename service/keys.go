package service

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/puzpuzpuz/xsync/v3"
)

// keyName names the key of a scope: the user for PerUser, the api for PerAPI,
// both for PerPair (the fields a scope does not read are empty).
type keyName struct {
	scope     hotlimit.Scope
	user, api string
}

// keyCache keeps the state keys of the names seen lately, so that a decision
// on a pair seen before allocates nothing: a key is a string the limiters
// hash and may store, made of both names. It is a pure cache: an entry is the
// same string stateKey makes, whatever the rules, so dropping any entry at
// any time changes no decision, and it needs no invalidation on Replace.
//
// It holds at most about twice the limiters' keys: an insertion that brings
// it to its threshold clears it, when it holds more than twice the keys the
// limiters hold (idle pairs that the limiters evicted), and sets the next
// threshold to twice what the limiters hold, never below min. The limiters'
// own eviction ([hotlimit.WithAutoSweep], Sweep) therefore bounds it too.
type keyCache struct {
	m        *xsync.MapOf[keyName, string]
	min      int64
	next     atomic.Int64 // size at which an insertion checks the bound
	trimming atomic.Bool  // one trim at a time
	held     func() int   // keys held by the limiters
}

var keySeed = maphash.MakeSeed()

// hashKeyName hashes every field; xsync's per-table seed is mixed in.
func hashKeyName(k keyName, seed uint64) uint64 {
	h := maphash.String(keySeed, k.user)
	h = (h*0x9e3779b97f4a7c15 ^ maphash.String(keySeed, k.api)) + uint64(k.scope)
	return h ^ seed
}

// minKeyCache is the least threshold at which the cache checks its bound.
const minKeyCache = 1024

func newKeyCache(min int, held func() int) *keyCache {
	c := &keyCache{
		m:    xsync.NewMapOfWithHasher[keyName, string](hashKeyName),
		min:  int64(max(min, minKeyCache)),
		held: held,
	}
	c.next.Store(c.min)
	return c
}

// key returns the key that a limit of scope counts requests from user to api
// under (see stateKey): one lock-free map load when seen lately.
func (c *keyCache) key(scope hotlimit.Scope, user, api string) string {
	name := keyName{scope: scope}
	switch scope {
	case hotlimit.Global:
		return globalKey
	case hotlimit.PerUser:
		name.user = user
	case hotlimit.PerAPI:
		name.api = api
	default:
		name.user, name.api = user, api
	}
	if k, ok := c.m.Load(name); ok {
		return k
	}
	k := stateKey(scope, user, api)
	c.m.Store(name, k) // racing stores store equal strings
	if int64(c.m.Size()) >= c.next.Load() {
		c.trim()
	}
	return k
}

// trim clears the cache when it holds more than twice the limiters' keys,
// then sets the next threshold. One goroutine trims at a time; others carry
// on without waiting.
func (c *keyCache) trim() {
	if !c.trimming.CompareAndSwap(false, true) {
		return
	}
	defer c.trimming.Store(false)
	held := int64(c.held())
	if int64(c.m.Size()) > 2*held {
		c.m.Clear()
	}
	c.next.Store(max(c.min, 2*held, int64(c.m.Size())+c.min))
}

// clear empties the cache.
func (c *keyCache) clear() {
	c.m.Clear()
	c.next.Store(c.min)
}
