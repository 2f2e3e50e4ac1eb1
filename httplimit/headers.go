package httplimit

import (
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
)

// Header keys in canonical form, so that Header.Get finds them; field names
// are case-insensitive on the wire.
const (
	keyPolicy         = "Ratelimit-Policy"
	keyRateLimit      = "Ratelimit"
	keyRetryAfter     = "Retry-After"
	keyLegacyLimit    = "X-Ratelimit-Limit"
	keyLegacyRemain   = "X-Ratelimit-Remaining"
	keyLegacyReset    = "X-Ratelimit-Reset"
	problemMediaType  = "application/problem+json"
	maxCachedPolicies = 1024
)

// PolicyName is the default policy name: the algorithm in lower case, the
// limit and the window, joined by '-', as in "fixedwindow-3-1s",
// "tokenbucket-100-1m" or "slidinglog-5-1h30m". See the package doc for why
// names are derived from the Config.
func PolicyName(c hotlimit.Config) string {
	return strings.ToLower(c.Algorithm.String()) + "-" + strconv.Itoa(c.Limit) + "-" + windowName(c.Window)
}

// windowName formats d as time.Duration does, without zero trailing units:
// "1m" rather than "1m0s", "2h" rather than "2h0m0s".
func windowName(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return strings.ReplaceAll(s, "µ", "u")
}

// ceilSeconds returns d in whole seconds, rounded up; 0 for d <= 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// policy is what the headers say about one Config, formatted once.
type policy struct {
	config hotlimit.Config
	name   string // the name, printable ASCII
	field  string // the RateLimit-Policy item: "name";q=3;w=1
	prefix string // the RateLimit item up to the remaining count: "name";r=
	limit  string // Limit in decimal, for X-RateLimit-Limit
}

// newPolicy formats c's header texts under the name name(c).
func newPolicy(c hotlimit.Config, name func(hotlimit.Config) string) *policy {
	n := sanitize(name(c))
	if n == "" {
		n = sanitize(PolicyName(c))
	}
	item := sfString(n)
	return &policy{
		config: c,
		name:   n,
		field:  item + ";q=" + strconv.Itoa(c.Limit) + ";w=" + strconv.FormatInt(max(ceilSeconds(c.Window), 1), 10),
		prefix: item + ";r=",
		limit:  strconv.Itoa(c.Limit),
	}
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

// policies caches the formatted policy of each Config seen. Readers load an
// immutable snapshot; a miss copies it under mu, adds the Config and swaps the
// copy in. Configs come from the service's rules, so the cache stays small;
// should rules churn past maxCachedPolicies distinct Configs, it starts over.
type policies struct {
	name func(hotlimit.Config) string
	mu   sync.Mutex               // serialises writers
	snap atomic.Pointer[snapshot] // never modified once stored
}

// snapshot indexes policies twice: all by Config, and by a 64-bit fold of the
// Config, whose lookup is several times cheaper than hashing the struct. The
// fold is not injective: a fast entry holds the first Config with that fold,
// and get checks the Config before trusting it.
type snapshot struct {
	fast map[uint64]*policy
	all  map[hotlimit.Config]*policy
}

// fold mixes c's fields into one word for the fast index.
func fold(c hotlimit.Config) uint64 {
	return uint64(c.Window) ^ uint64(c.Limit)*0x9e3779b97f4a7c15 ^ uint64(c.Algorithm)<<59
}

func newPolicies(name func(hotlimit.Config) string) *policies {
	ps := &policies{name: name}
	ps.snap.Store(&snapshot{fast: map[uint64]*policy{}, all: map[hotlimit.Config]*policy{}})
	return ps
}

// get returns c's policy: once cached, an atomic load and a uint64-keyed map
// lookup.
func (ps *policies) get(c hotlimit.Config) *policy {
	snap := ps.snap.Load()
	if p := snap.fast[fold(c)]; p != nil && p.config == c {
		return p
	}
	if p, ok := snap.all[c]; ok {
		return p
	}
	return ps.add(c)
}

func (ps *policies) add(c hotlimit.Config) *policy {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	old := ps.snap.Load()
	if p, ok := old.all[c]; ok {
		return p
	}
	next := &snapshot{
		fast: make(map[uint64]*policy, len(old.fast)+1),
		all:  make(map[hotlimit.Config]*policy, len(old.all)+1),
	}
	if len(old.all) < maxCachedPolicies {
		maps.Copy(next.fast, old.fast)
		maps.Copy(next.all, old.all)
	}
	p := newPolicy(c, ps.name)
	next.all[c] = p
	if _, taken := next.fast[fold(c)]; !taken {
		next.fast[fold(c)] = p
	}
	ps.snap.Store(next)
	return p
}

// setHeaders writes the RateLimit fields of d under p, the legacy fields when
// legacy is set, and Retry-After when deny is set and waiting helps.
//
// Every number goes into one string, built in a stack buffer: the RateLimit
// item "name";r=R;t=T followed by the Retry-After seconds. The legacy fields
// and Retry-After are substrings of it, and one array backs every header
// value, so the whole call allocates twice. Each value slice is capped at
// length 1, so a handler that appends to one never writes into another.
func setHeaders(h http.Header, p *policy, d hotlimit.Decision, legacy, deny bool) {
	var buf [128]byte
	b := append(buf[:0], p.prefix...)
	rFrom := len(b)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	rTo := len(b)
	b = append(b, ";t="...)
	tFrom := len(b)
	b = strconv.AppendInt(b, ceilSeconds(d.ResetAfter), 10)
	tTo := len(b)
	retry := deny && d.RetryAfter != hotlimit.Never
	if retry {
		// Rounded up, so never earlier than the limiter's RetryAfter; at
		// least 1, since a denial that may retry at once would be a loop.
		b = strconv.AppendInt(b, max(ceilSeconds(d.RetryAfter), 1), 10)
	}
	s := string(b)

	var vals []string
	if legacy {
		vals = make([]string, 6)
	} else {
		vals = make([]string, 3)
	}
	vals[0], vals[1], vals[2] = p.field, s[:tTo], s[tTo:]
	if len(h) == 0 { // the usual case: nothing to append to, one map write each
		h[keyPolicy] = vals[0:1:1]
		h[keyRateLimit] = vals[1:2:2]
	} else {
		appendValue(h, keyPolicy, vals[0:1:1])
		appendValue(h, keyRateLimit, vals[1:2:2])
	}
	if retry {
		h[keyRetryAfter] = vals[2:3:3]
	}
	if legacy {
		vals[3], vals[4], vals[5] = p.limit, s[rFrom:rTo], s[tFrom:tTo]
		h[keyLegacyLimit] = vals[3:4:4]
		h[keyLegacyRemain] = vals[4:5:5]
		h[keyLegacyReset] = vals[5:6:6]
	}
}

// appendValue adds v (one value) to the list field key: it becomes the field
// when the field is absent, and is appended to the field's values otherwise,
// so nested limiters each advertise their policy.
func appendValue(h http.Header, key string, v []string) {
	if old := h[key]; len(old) > 0 {
		h[key] = append(old, v[0])
		return
	}
	h[key] = v
}
