package service

import (
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/hotlimit/hotlimit/unlimited"
	"github.com/puzpuzpuz/xsync/v3"
)

// keyName names the key of a scope: the user for PerUser, the api for PerAPI,
// both for PerPair (the fields a scope does not read are empty).
type keyName struct {
	scope     hotlimit.Scope
	user, api string
}

// keyCache keeps the state keys of the names seen lately, for the limiters
// that may keep a key they are given (a factory's, such as redislimit's), so
// that a decision on a pair seen before allocates nothing: a key is a string
// made of both names. The in-memory limiters get keys built in a stackKey or
// a keyBuf instead, which costs no lookup and holds nothing per pair. It is a
// pure cache: an entry is the same string stateKey makes, whatever the rules,
// so dropping any entry at any time changes no decision, and it needs no
// invalidation on Replace.
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
	// Invariant: at most one goroutine is past this CAS until its deferred
	// Store; a loser returns at once instead of waiting. Trims never
	// overlap, so each sets next from the size its own Clear left; a racing
	// Store of an insertion lands before or after the Clear, and either is
	// sound, as every entry is the string stateKey makes.
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

// keyBuf builds state keys without allocating, for the limiters that copy a
// key they keep (see copiesKeys): a key built in it is valid until the
// buffer is put back in keyBufs, which is done once the decision returns.
type keyBuf struct{ b []byte }

// keyBufs recycles keyBufs across decisions.
var keyBufs = sync.Pool{New: func() any { return &keyBuf{b: make([]byte, 0, 256)} }}

// maxPooledKeyBuf bounds the buffer a pool keeps: one grown by huge names is
// dropped.
const maxPooledKeyBuf = 4096

func getKeyBuf() *keyBuf { return keyBufs.Get().(*keyBuf) }

func (k *keyBuf) put() {
	if cap(k.b) <= maxPooledKeyBuf {
		k.b = k.b[:0]
		keyBufs.Put(k)
	}
}

// key appends the key of scope for (user, api) (see stateKey) to the buffer
// and returns it as a string that aliases the buffer. Keys appended earlier
// stay valid: a growing append leaves them in the old array.
func (k *keyBuf) key(scope hotlimit.Scope, user, api string) string {
	start := len(k.b)
	switch scope {
	case hotlimit.Global:
		return globalKey
	case hotlimit.PerUser:
		k.b = append(k.b, userKeyPrefix...)
		k.b = append(k.b, user...)
	case hotlimit.PerAPI:
		k.b = append(k.b, apiKeyPrefix...)
		k.b = append(k.b, api...)
	default:
		switch n := len(user); {
		case n < 10:
			k.b = append(k.b, byte('0'+n))
		case n < 100:
			k.b = append(k.b, byte('0'+n/10), byte('0'+n%10))
		default:
			k.b = strconv.AppendUint(k.b, uint64(n), 10)
		}
		k.b = append(k.b, ':')
		k.b = append(k.b, user...)
		k.b = append(k.b, '|')
		k.b = append(k.b, api...)
	}
	return unsafe.String(unsafe.SliceData(k.b[start:]), len(k.b)-start)
}

// stackKeyLen is the longest key a decision builds in a stackKey, on its own
// stack. A longer key is built in a longKey, declared on the slower path so
// that the short keys of most decisions do not pay for zeroing it, and a key
// longer still in a pooled keyBuf.
const (
	stackKeyLen = 64
	longKeyLen  = 512
)

// stackKey builds one state key on the caller's stack, for the limiters that
// copy a key they keep (see copiesKeys): no pool, no allocation. A key built
// in it is valid until the stackKey goes out of scope, which is when the
// decision returns.
//
// The key passed to a limiter is an interface call's argument, which the
// compiler's escape analysis takes to escape, and would move the array to
// the heap on every call. The key is built through noescape to prevent that:
// sound because the limiters that get such keys never keep them (they keep a
// copy, made on insertion, see internal/keyed) and never hand them to
// another goroutine, so no reference outlives the call. A stack that grows
// during the call is copied with the pointers into it adjusted, this one
// included, as for any pointer into a stack.
type stackKey [stackKeyLen]byte

// longKey is a stackKey for keys of up to longKeyLen bytes.
type longKey [longKeyLen]byte

// key builds the key of scope for (user, api) (see stateKey) in k and
// returns it as a string that aliases k; ok is false, and k unused, when the
// key is longer than stackKeyLen.
func (k *stackKey) key(scope hotlimit.Scope, user, api string) (key string, ok bool) {
	return buildKey(k[:], scope, user, api)
}

// key is stackKey.key for keys of up to longKeyLen bytes.
func (k *longKey) key(scope hotlimit.Scope, user, api string) (key string, ok bool) {
	return buildKey(k[:], scope, user, api)
}

// noescape hides p from escape analysis: the runtime's own, also used by
// github.com/puzpuzpuz/xsync/v3 (it is one of the runtime's linkname-exported
// symbols, see go.dev/issue/67401).
//
//go:noescape
//go:linkname noescape runtime.noescape
func noescape(p unsafe.Pointer) unsafe.Pointer

// buildKey builds the key of scope for (user, api) (see stateKey) in b,
// which is at most 999 bytes long, and returns it as a string that aliases b
// and that escape analysis does not see (see stackKey); ok is false when the
// key is longer than b.
func buildKey(b []byte, scope hotlimit.Scope, user, api string) (key string, ok bool) {
	var n int
	switch scope {
	case hotlimit.Global:
		return globalKey, true
	case hotlimit.PerUser:
		if len(user) > len(b)-len(userKeyPrefix) {
			return "", false
		}
		n = copy(b, userKeyPrefix)
		n += copy(b[n:], user)
	case hotlimit.PerAPI:
		if len(api) > len(b)-len(apiKeyPrefix) {
			return "", false
		}
		n = copy(b, apiKeyPrefix)
		n += copy(b[n:], api)
	default:
		u := len(user)
		if u > len(b) || len(api) > len(b) || decimalLen(u)+2+u+len(api) > len(b) {
			return "", false
		}
		switch { // u ≤ len(b) < 1000: at most 3 digits
		case u < 10:
			b[0], n = byte('0'+u), 1
		case u < 100:
			b[0], b[1], n = byte('0'+u/10), byte('0'+u%10), 2
		default:
			b[0], b[1], b[2], n = byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10), 3
		}
		b[n] = ':'
		n++
		n += copy(b[n:], user)
		b[n] = '|'
		n++
		n += copy(b[n:], api)
	}
	return unsafe.String((*byte)(noescape(unsafe.Pointer(unsafe.SliceData(b)))), n), true
}

// copiesKeys reports whether l is one of this module's in-memory limiters,
// which never keep a key they are given, only a copy (see internal/keyed), so
// that a key may alias a buffer reused after the call. A factory's limiters
// (redislimit's queue keys for later) get keys of their own.
func copiesKeys(l hotlimit.Limiter) bool {
	switch l.(type) {
	case *tokenbucket.Limiter, *fixedwindow.Limiter, *gcra.Limiter, *slidingcounter.Limiter, *slidinglog.Limiter, *unlimited.Limiter:
		return true
	}
	return false
}
