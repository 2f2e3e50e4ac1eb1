package transport

import (
	"maps"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
)

// MaxCachedPolicies bounds a Policies cache; past it, the cache starts over.
const MaxCachedPolicies = 1024

// PolicyName is the default policy name: the algorithm in lower case, the
// limit and the window, joined by '-', as in "fixedwindow-3-1s",
// "tokenbucket-100-1m" or "slidinglog-5-1h30m", and the burst when it
// differs from the limit, "tokenbucket-5-1s-burst20", since it changes what
// passes.
func PolicyName(c hotlimit.Config) string {
	n := strings.ToLower(c.Algorithm.String()) + "-" + strconv.Itoa(c.Limit) + "-" + WindowName(c.Window)
	if q := c.Capacity(); q != c.Limit {
		n += "-burst" + strconv.Itoa(q)
	}
	return n
}

// Quota returns the q and w parameters of c's RateLimit-Policy item: q
// requests per w seconds. q is what a fresh key passes at once,
// c.Capacity() (Burst for a token bucket or GCRA that sets one, else
// Limit), so that the remaining count r, which can reach Capacity − 1, never
// exceeds q. w is the time the policy's rate, Limit per Window, takes to
// grant q, in seconds rounded up and at least 1: a client that paces itself
// at q per w never exceeds the rate, and a burst of q from a full quota
// passes. Without a burst that is Limit per Window, rounded up.
func Quota(c hotlimit.Config) (q int, w int64) {
	q = c.Capacity()
	if c.Limit <= 0 || q <= 0 || c.Window <= 0 || q == c.Limit {
		return q, max(CeilSeconds(c.Window), 1)
	}
	// Window·q/Limit nanoseconds, rounded up, in 128 bits: both factors
	// can be large. A quotient past what a Duration holds is clamped.
	hi, lo := bits.Mul64(uint64(c.Window), uint64(q))
	if hi >= uint64(c.Limit) {
		return q, max(CeilSeconds(math.MaxInt64), 1)
	}
	ns, rem := bits.Div64(hi, lo, uint64(c.Limit))
	if rem != 0 {
		ns++
	}
	if ns > math.MaxInt64 {
		ns = math.MaxInt64
	}
	return q, max(CeilSeconds(time.Duration(ns)), 1)
}

// RateText says c's rate and burst in words, for denial messages: "3
// requests per 1s", "1 request per 1m", and, when a token bucket or GCRA
// sets a burst other than its limit, "5 requests per 1s, bursts of 20", the
// q its RateLimit-Policy item advertises (see Quota); then, for a quota
// that is not the (user, api) pair's own, whose: "per user, across APIs",
// "shared by every user of the API" or "shared by every user", so that a
// client denied by a quota it shares does not read it as its own.
func RateText(c hotlimit.Config) string {
	requests := " requests per "
	if c.Limit == 1 {
		requests = " request per "
	}
	s := strconv.Itoa(c.Limit) + requests + WindowName(c.Window)
	if q := c.Capacity(); q != c.Limit {
		s += ", bursts of " + strconv.Itoa(q)
	}
	switch c.Scope {
	case hotlimit.PerUser:
		s += ", per user, across APIs"
	case hotlimit.PerAPI:
		s += ", shared by every user of the API"
	case hotlimit.Global:
		s += ", shared by every user"
	}
	return s
}

// WindowName formats d as time.Duration does, without zero trailing units:
// "1m" rather than "1m0s", "2h" rather than "2h0m0s".
func WindowName(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return strings.ReplaceAll(s, "µ", "u")
}

// CeilSeconds returns d in whole seconds, rounded up; 0 for d <= 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// Advertised reports whether the RateLimit fields advertise c: not when
// it is Unlimited (an allow-listed caller has no quota; its fields would
// read q=0 beside the largest r) or in shadow mode (it never denies, and
// its numbers would pace clients by a limit nobody enforces).
// service.Service.TakeEach leaves shadow limits out of a rule that has
// others, but lists them when every limit of the rule is in shadow mode.
func Advertised(c hotlimit.Config) bool {
	return c.Algorithm != hotlimit.Unlimited && !c.Shadow
}

// Policy is what the RateLimit fields say about one Config, formatted once.
type Policy struct {
	Config hotlimit.Config
	Name   string // the name, printable ASCII
	Field  string // the RateLimit-Policy item: "name";q=3;w=1
	Prefix string // the RateLimit item up to the remaining count: "name";r=
	Limit  string // q of Field in decimal (see Quota)
	// Fields is []string{Field} with capacity 1, for header maps that can
	// share it: nobody may write its element, and an append copies it.
	Fields []string
}

// NewPolicy formats c's texts under the name name(c); a name that sanitizes
// to "" falls back to PolicyName.
func NewPolicy(c hotlimit.Config, name func(hotlimit.Config) string) *Policy {
	n := sanitize(name(c))
	if n == "" {
		n = sanitize(PolicyName(c))
	}
	item := sfString(n)
	q, w := Quota(c)
	field := item + ";q=" + strconv.Itoa(q) + ";w=" + strconv.FormatInt(w, 10)
	return &Policy{
		Config: c,
		Name:   n,
		Field:  field,
		Prefix: item + ";r=",
		Limit:  strconv.Itoa(q),
		Fields: []string{field}[:1:1],
	}
}

// AppendRateLimit appends p's RateLimit item for d, "name";r=R;t=T, to b:
// R is d.Remaining (at least 0) and T d.ResetAfter in seconds, rounded up.
// It also returns where R and T start and end in the result, so callers can
// reuse the digits as substrings.
func (p *Policy) AppendRateLimit(b []byte, d hotlimit.Decision) (out []byte, rFrom, rTo, tFrom, tTo int) {
	b = append(b, p.Prefix...)
	rFrom = len(b)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	rTo = len(b)
	b = append(b, ";t="...)
	tFrom = len(b)
	b = strconv.AppendInt(b, CeilSeconds(d.ResetAfter), 10)
	return b, rFrom, rTo, tFrom, len(b)
}

// sanitize replaces every byte outside printable ASCII with '_', so that the
// name fits a Structured Field String.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '_'
		}
		return r
	}, s)
}

// SFString serialises s as a Structured Field String (RFC 9651 section
// 4.1.6): each character outside printable ASCII replaced by '_', then
// quoted, with '"' and '\' escaped.
func SFString(s string) string { return sfString(sanitize(s)) }

// sfString serialises printable ASCII s as a Structured Field String (RFC
// 9651 section 4.1.6): quoted, with '"' and '\' escaped.
func sfString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// Policies caches the formatted policy of each Config seen. Readers load an
// immutable snapshot; a miss copies it under mu, adds the Config and swaps the
// copy in. Configs come from the service's rules, so the cache stays small;
// should rules churn past MaxCachedPolicies distinct Configs, it starts over.
type Policies struct {
	name func(hotlimit.Config) string
	mu   sync.Mutex               // serialises writers
	snap atomic.Pointer[snapshot] // never modified once stored
	// scoped names each policy with its scope too (see InRule); nil in
	// itself.
	scoped *Policies
}

// snapshot indexes policies twice: all by Config, and by a 64-bit fold of the
// Config, whose lookup is several times cheaper than hashing the struct. The
// fold is not injective: a fast entry holds the first Config with that fold,
// and Get checks the Config before trusting it.
type snapshot struct {
	fast map[uint64]*Policy
	all  map[hotlimit.Config]*Policy
}

// fold mixes c's fields into one word for the fast index.
func fold(c hotlimit.Config) uint64 {
	return uint64(c.Window) ^ uint64(c.Limit)*0x9e3779b97f4a7c15 ^ uint64(c.Algorithm)<<59
}

// NewPolicies returns an empty cache naming policies with name (PolicyName
// when nil).
func NewPolicies(name func(hotlimit.Config) string) *Policies {
	if name == nil {
		name = PolicyName
	}
	ps := newPolicies(name)
	ps.scoped = newPolicies(func(c hotlimit.Config) string {
		n := name(c)
		if n == "" { // as NewPolicy falls back, so that the scope follows the default name
			n = PolicyName(c)
		}
		return n + "-" + c.Scope.String()
	})
	return ps
}

// newPolicies returns an empty cache naming policies with name.
func newPolicies(name func(hotlimit.Config) string) *Policies {
	ps := &Policies{name: name}
	ps.snap.Store(&snapshot{fast: map[uint64]*Policy{}, all: map[hotlimit.Config]*Policy{}})
	return ps
}

// InRule returns the policy of c, one of the n limits a rule lists
// (at(i) is the i-th, c among them), for a response that lists them all:
// c's Get, unless another limit's policy has the same name and c counts per
// user, api or everyone. It is then named with its scope too, as
// "fixedwindow-10-1m-user", so that each item of the response names one
// limit. Which limits are renamed depends only on the rule's limits, not on
// which decided, so a rule's names stay the same from response to response.
// Two limits of one rule that differ only in their scope name the same
// policy otherwise (PolicyName leaves the scope out), and a client could not
// tell their items apart.
func (ps *Policies) InRule(c hotlimit.Config, n int, at func(i int) hotlimit.Config) *Policy {
	p := ps.Get(c)
	if c.Scope == hotlimit.PerPair || ps.scoped == nil {
		return p
	}
	for i := range n {
		if o := at(i); o != c && ps.Get(o).Name == p.Name {
			return ps.scoped.Get(c)
		}
	}
	return p
}

// Get returns c's policy: once cached, an atomic load and a uint64-keyed map
// lookup.
func (ps *Policies) Get(c hotlimit.Config) *Policy {
	snap := ps.snap.Load()
	if p := snap.fast[fold(c)]; p != nil && p.Config == c {
		return p
	}
	if p, ok := snap.all[c]; ok {
		return p
	}
	return ps.add(c)
}

func (ps *Policies) add(c hotlimit.Config) *Policy {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := ps.snap.Load()
	if p, ok := old.all[c]; ok {
		return p
	}
	next := &snapshot{
		fast: make(map[uint64]*Policy, len(old.fast)+1),
		all:  make(map[hotlimit.Config]*Policy, len(old.all)+1),
	}
	if len(old.all) < MaxCachedPolicies {
		maps.Copy(next.fast, old.fast)
		maps.Copy(next.all, old.all)
	}
	p := NewPolicy(c, ps.name)
	next.all[c] = p
	if _, taken := next.fast[fold(c)]; !taken {
		next.fast[fold(c)] = p
	}
	ps.snap.Store(next)
	return p
}
