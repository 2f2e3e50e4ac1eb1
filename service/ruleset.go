package service

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/jsonobj"
	"github.com/hotlimit/hotlimit/internal/nilness"
)

// Limits is one rule: a request passes only when every limit passes, and is
// then counted by each; when one denies it, the limits that admitted it give
// it back (see package composite). One limit is the common case; two express
// policies like "10 per second and 100 per minute". A rule holds at least one
// limit, at most composite.MaxChildren (16), and no limit twice, a limit and its copy in shadow mode, or with
// the burst a limit of no burst takes spelled out (its limit, or under
// [hotlimit.WithBurst] among the service's options that burst; which of the
// two only the service knows, so [Rules.Validate] leaves this case to it),
// counting as the same limit (they would count every request twice
// under one key). So under WithBurst(2), TokenBucket 3 per minute with
// burst 3 and the same limit with no burst are two limits, and a rule may
// hold both. [hotlimit.Unlimited] is a
// rule alone, an allow-list entry: beside other limits, which must pass too,
// it would change nothing, and is rejected. Its
// order is kept, and is the order a denied request's Decision is computed
// in, sliding logs last (see [Service.Take]).
type Limits []hotlimit.Config

// Pair names the requests from User to API.
type Pair struct {
	User string
	API  string
}

// Rules is the whole policy of a [Service] as a plain value: the default rule
// and the overrides, resolved most specific first:
//
//	Pairs[{user, api}] > APIs[api] > Users[user] > Default
//
// Build it in Go, or read it from JSON with [LoadRules]; install it with
// [Service.Replace] or [NewFromRules]; read it back with [Service.Rules].
// Its JSON form, written by [Rules.MarshalJSON], is
//
//	{
//	  "default": [{"algorithm":"FixedWindow","limit":100,"window":"1m0s"}],
//	  "users":   {"alice": [{"algorithm":"TokenBucket","limit":5,"window":"1s","burst":10}]},
//	  "apis":    {"GET /search": [{"algorithm":"GCRA","limit":10,"window":"1s"}]},
//	  "pairs":   [{"user":"premium","api":"pay","limits":[
//	               {"algorithm":"TokenBucket","limit":10,"window":"1s"},
//	               {"algorithm":"SlidingLog","limit":100,"window":"1m0s"}]}]
//	}
//
// Each rule is a list of limits in the form of [hotlimit.Config.MarshalJSON].
// Pairs are a list, sorted by user then API, since a pair is not one string;
// "users", "apis" and "pairs" are omitted when empty. JSON strings hold only
// valid UTF-8, so names that are not valid UTF-8 work in Go but cannot be
// written as JSON: MarshalJSON rejects them rather than alter them, and
// UnmarshalJSON (so [LoadRules]) rejects JSON that is not UTF-8 (a file
// saved in Latin-1, say), or escapes half a surrogate pair, rather than read
// its names altered.
type Rules struct {
	// Default applies to requests no override matches. It is required.
	Default Limits
	// Users applies to every request from a user, below APIs and Pairs.
	Users map[string]Limits
	// APIs applies to every request to an API, below Pairs.
	APIs map[string]Limits
	// Pairs applies to requests from one user to one API, above every other rule.
	Pairs map[Pair]Limits
}

// Validate checks every limit of every rule as [NewLimiter] would (its scope
// aside, which only a rule takes), so a Config
// that is valid but outside its algorithm's range is rejected too. The error
// names the offending entry, as in `users["alice"][1]: ...` (a name of more
// than 128 bytes by its start and its length), and wraps
// hotlimit.ErrInvalidConfig; so does the error for a rule of no limit, of
// more than composite.MaxChildren, of a limit twice (or with its copy in
// shadow mode), or of Unlimited beside other limits (see [Limits]). A limit
// beside its copy with its burst spelled out is the service's to reject, as
// only its options say which burst a limit of no burst takes. Entries
// are checked in a fixed order (default,
// users, apis, pairs, each sorted by name), so the same rules give the same
// error.
func (r Rules) Validate() error {
	checked := map[hotlimit.Config]bool{}
	return r.each(func(path string, ls Limits) error {
		for _, c := range ls {
			if checked[c] {
				continue
			}
			err := c.ValidateFields() // the scope, which NewLimiter does not take
			if err == nil {
				_, err = NewLimiter(unscoped(c, 0))
			}
			if err != nil {
				return fmt.Errorf("service: %s: %w", entryPath(path, ls, c), err)
			}
			checked[c] = true
		}
		return nil
	})
}

// entryPath names the limit c of the rule ls at path, as path[i].
func entryPath(path string, ls Limits, c hotlimit.Config) string {
	return path + "[" + strconv.Itoa(slices.Index(ls, c)) + "]"
}

// each calls f on every rule with its path, in the order Validate documents,
// after checking the rule's shape: at least one limit, none twice (shadow
// mode aside). It stops at the first error.
func (r Rules) each(f func(path string, ls Limits) error) error {
	return r.walk(func(path string, ls Limits) error {
		if len(ls) == 0 {
			return fmt.Errorf("service: %s: a rule needs at least one limit: %w", path, hotlimit.ErrInvalidConfig)
		}
		if len(ls) > composite.MaxChildren {
			// As newMulti, which enforces the rule, would say: rules that
			// validate are rules a service takes.
			return fmt.Errorf("service: %s: %d limits, at most %d: %w", path, len(ls), composite.MaxChildren, hotlimit.ErrInvalidConfig)
		}
		for i, c := range ls {
			if !c.Scope.Valid() {
				return fmt.Errorf("service: %s[%d]: Config.Scope %v is not a scope: %w", path, i, c.Scope, hotlimit.ErrInvalidConfig)
			}
			// Beside other limits, all of which must pass too, Unlimited
			// would change nothing: whoever wrote it meant an allow-list
			// entry, which is Unlimited alone.
			if c.Algorithm == hotlimit.Unlimited && len(ls) > 1 {
				return fmt.Errorf("service: %s[%d]: Unlimited in a rule of %d limits would change nothing, as every limit of a rule must pass; an allow-list entry is a rule of Unlimited alone: %w", path, i, len(ls), hotlimit.ErrInvalidConfig)
			}
			// A limit and its copy in shadow mode are the same limit
			// whatever the service's burst: they would count under one
			// key of one limiter (see unscoped), so every request would be
			// taken twice, and the shadow copy would deny what the limit
			// alone passes. A copy with the burst spelled out is one too,
			// but which burst that is only the service knows: build
			// checks it.
			if j := slices.IndexFunc(ls[:i], func(p hotlimit.Config) bool { return sameLimit(p, c) }); j >= 0 {
				return repeatedLimit(path, ls, i, j, 0)
			}
		}
		return f(path, ls)
	})
}

// repeatedLimit is the error of the limit ls[i] of the rule at path, the
// same limit as ls[j] (under the service's burst defBurst, when it is not 0).
func repeatedLimit(path string, ls Limits, i, j, defBurst int) error {
	// Two copies of an invalid limit (two limits missing the same field)
	// are first of all invalid: say which field.
	if err := ls[j].Validate(); err != nil {
		return fmt.Errorf("service: %s[%d]: %w", path, j, err)
	}
	under := ""
	if defBurst > 0 {
		under = fmt.Sprintf(" under the service's burst %d", defBurst)
	}
	return fmt.Errorf("service: %s[%d]: the same limit as %s[%d] (%v)%s%s: %w", path, i, path, j, ls[j], under, shadowCopyHint(ls[j], ls[i]), hotlimit.ErrInvalidConfig)
}

// shadowCopyHint is what the error of a limit that repeats another of its
// rule adds when one of the two is in shadow mode: how to roll a new limit
// out beside the one it resembles, which a user adding a shadow copy meant.
func shadowCopyHint(a, b hotlimit.Config) string {
	if a.Shadow == b.Shadow {
		return ""
	}
	return ", in shadow mode: the two would count every request twice under one key, and the shadow copy would deny what the limit alone passes; give the shadow limit another limit or window"
}

// walk calls visit on every rule with its path, in the order Validate
// documents, and stops at the first error.
func (r Rules) walk(visit func(path string, ls Limits) error) error {
	if err := visit("default", r.Default); err != nil {
		return err
	}
	for _, m := range []struct {
		name  string
		rules map[string]Limits
	}{{"users", r.Users}, {"apis", r.APIs}} {
		for _, k := range slices.Sorted(maps.Keys(m.rules)) {
			if err := visit(m.name+"["+jsonobj.Quote(k)+"]", m.rules[k]); err != nil {
				return err
			}
		}
	}
	for _, p := range sortedPairs(r.Pairs) {
		if err := visit(pairPath(p), r.Pairs[p]); err != nil {
			return err
		}
	}
	return nil
}

// pairPath names the rule of p in an error, as pairs["user","api"], each
// name quoted by jsonobj.Quote: a name of a megabyte is cut to its start and
// its length, so that the error stays a line. The rule's own name, which
// observers and the shadow hook are given, is pairName.
func pairPath(p Pair) string {
	return "pairs[" + jsonobj.Quote(p.User) + "," + jsonobj.Quote(p.API) + "]"
}

// pairName is the name of the rule of p, as pairs["user","api"], the names
// whole: it tells one rule from another.
func pairName(p Pair) string {
	return "pairs[" + strconv.Quote(p.User) + "," + strconv.Quote(p.API) + "]"
}

// sortedPairs returns the keys of m by user, then API.
func sortedPairs(m map[Pair]Limits) []Pair {
	return slices.SortedFunc(maps.Keys(m), func(a, b Pair) int {
		return cmp.Or(strings.Compare(a.User, b.User), strings.Compare(a.API, b.API))
	})
}

// NamedAPIs returns the APIs that r's rules name, in APIs and in Pairs,
// sorted and each once: what a request's api must equal for such a rule to
// apply.
func (r Rules) NamedAPIs() []string {
	set := map[string]bool{}
	for api := range r.APIs {
		set[api] = true
	}
	for p := range r.Pairs {
		set[p.API] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// NamedUsers returns the users that r's rules name, in Users and in Pairs,
// sorted and each once.
func (r Rules) NamedUsers() []string {
	set := map[string]bool{}
	for user := range r.Users {
		set[user] = true
	}
	for p := range r.Pairs {
		set[p.User] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// UnmatchedAPIs returns the APIs that rules name (see [Rules.NamedAPIs])
// that are none of routes, sorted: rules that never apply to requests whose
// api is one of routes. A service accepts such rules (the routes may come
// later); this is how to see them, at startup or at each reload (see
// [WatchOptions.Routes]). For an HTTP service, routes are the patterns its
// mux registers, as httplimit.RoutePattern reports them ("GET /pay", not
// "pay" or "/pay").
func UnmatchedAPIs(rules Rules, routes []string) []string {
	var out []string
	for _, api := range rules.NamedAPIs() {
		if !slices.Contains(routes, api) {
			out = append(out, api)
		}
	}
	return out
}

// Clone returns a deep copy of r: changing one changes nothing in the other.
// Empty maps come back nil; a rule comes back as it was, nil or empty.
func (r Rules) Clone() Rules {
	out := Rules{Default: slices.Clone(r.Default)}
	out.Users = cloneRules(r.Users)
	out.APIs = cloneRules(r.APIs)
	out.Pairs = cloneRules(r.Pairs)
	return out
}

// cloneRules deep-copies m, or returns nil when m is empty.
func cloneRules[K comparable](m map[K]Limits) map[K]Limits {
	if len(m) == 0 {
		return nil
	}
	out := make(map[K]Limits, len(m))
	for k, ls := range m {
		out[k] = slices.Clone(ls)
	}
	return out
}

// rulesJSON is the JSON shape of Rules on output.
type rulesJSON struct {
	Default Limits            `json:"default"`
	Users   map[string]Limits `json:"users,omitempty"`
	APIs    map[string]Limits `json:"apis,omitempty"`
	Pairs   []pairJSON        `json:"pairs,omitempty"`
}

// pairJSON is the JSON shape of one pair rule.
type pairJSON struct {
	User   string `json:"user"`
	API    string `json:"api"`
	Limits Limits `json:"limits"`
}

// MarshalJSON writes r in the form documented on [Rules], pairs sorted by
// user then API (users and APIs are sorted by encoding/json). It fails when a
// name is not valid UTF-8 or a limit names no algorithm or no scope, naming
// the entry; it does not otherwise validate r.
func (r Rules) MarshalJSON() ([]byte, error) {
	out := rulesJSON{Default: r.Default, Users: r.Users, APIs: r.APIs}
	if out.Default == nil {
		out.Default = Limits{}
	}
	for _, m := range []struct {
		name  string
		rules map[string]Limits
	}{{"users", r.Users}, {"apis", r.APIs}} {
		for k := range m.rules {
			if !utf8.ValidString(k) {
				return nil, fmt.Errorf("service: %s[%s]: a name that is not valid UTF-8 cannot be written as JSON", m.name, jsonobj.Quote(k))
			}
		}
	}
	for _, p := range sortedPairs(r.Pairs) {
		if !utf8.ValidString(p.User) || !utf8.ValidString(p.API) {
			return nil, fmt.Errorf("service: %s: a name that is not valid UTF-8 cannot be written as JSON", pairPath(p))
		}
		out.Pairs = append(out.Pairs, pairJSON{User: p.User, API: p.API, Limits: r.Pairs[p]})
	}
	b, err := json.Marshal(out)
	if err != nil {
		// Only a limit without an algorithm, or of no scope, fails; find
		// it to name it.
		if ferr := r.walk(func(path string, ls Limits) error {
			for i, c := range ls {
				if !c.Algorithm.Valid() || !c.Scope.Valid() {
					return fmt.Errorf("service: %s[%d]: %w", path, i, err)
				}
			}
			return nil
		}); ferr != nil {
			return nil, ferr
		}
		return nil, fmt.Errorf("service: rules: %w", err)
	}
	return b, nil
}

// UnmarshalJSON reads the form documented on [Rules], strictly: unknown
// fields (also differently cased ones) are rejected, "default" is required,
// every limit is read by [hotlimit.Config.UnmarshalJSON], and a field, user,
// api or pair given twice is an error (encoding/json would keep the last),
// and so is a byte that is not UTF-8, or a \u escape of half a UTF-16
// surrogate pair (encoding/json would read either as U+FFFD, so that a name
// written in another encoding would name another user or api than the
// requests' and its rule would never apply).
// Errors name the offending entry, as in
// `users["alice"][1].window: ...` (a name of more than 128 bytes by its
// start and its length), and wrap hotlimit.ErrInvalidConfig. It
// checks the form, not the values: [LoadRules] also validates them. On error
// r is unchanged.
func (r *Rules) UnmarshalJSON(data []byte) error {
	if err := checkUTF8(data); err != nil {
		return err
	}
	fields, err := jsonobj.Object(data, hotlimit.ErrInvalidConfig, "default", "users", "apis", "pairs")
	if err != nil {
		return fmt.Errorf("service: rules: %w", err)
	}
	var next Rules
	raw, ok := fields["default"]
	if !ok {
		return fmt.Errorf("service: default: missing: %w", hotlimit.ErrInvalidConfig)
	}
	if next.Default, err = decodeLimits("default", raw); err != nil {
		return err
	}
	for _, m := range []struct {
		name string
		dst  *map[string]Limits
	}{{"users", &next.Users}, {"apis", &next.APIs}} {
		raw, ok := fields[m.name]
		if !ok || string(raw) == "null" {
			continue
		}
		rules, dup, ok := jsonobj.Members(raw)
		if !ok {
			return fmt.Errorf("service: %s: want an object of rules by name, got %s: %w", m.name, jsonobj.Kind(raw), hotlimit.ErrInvalidConfig)
		}
		if dup != "" {
			return fmt.Errorf("service: %s[%s]: given twice: %w", m.name, jsonobj.Quote(dup), hotlimit.ErrInvalidConfig)
		}
		if len(rules) > 0 {
			*m.dst = make(map[string]Limits, len(rules))
		}
		for name, raw := range rules {
			ls, err := decodeLimits(m.name+"["+jsonobj.Quote(name)+"]", raw)
			if err != nil {
				return err
			}
			(*m.dst)[name] = ls
		}
	}
	if raw, ok := fields["pairs"]; ok && string(raw) != "null" {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("service: pairs: want an array of {user, api, limits}, got %s: %w", jsonobj.Kind(raw), hotlimit.ErrInvalidConfig)
		}
		for i, raw := range list {
			path := "pairs[" + strconv.Itoa(i) + "]"
			p, ls, err := decodePair(path, raw)
			if err != nil {
				return err
			}
			if next.Pairs == nil {
				next.Pairs = make(map[Pair]Limits, len(list))
			}
			if _, dup := next.Pairs[p]; dup {
				return fmt.Errorf("service: %s: user %s, api %s listed twice: %w", path, jsonobj.Quote(p.User), jsonobj.Quote(p.API), hotlimit.ErrInvalidConfig)
			}
			next.Pairs[p] = ls
		}
	}
	*r = next
	return nil
}

// byteOrderMark is U+FEFF in UTF-8, which some editors write at the start
// of a file.
var byteOrderMark = []byte("\xef\xbb\xbf")

// syntaxErrorChar returns the offset in data of the character at which a
// *json.SyntaxError of Offset off is, and false when off is outside data.
// Offset counts the bytes read, the bad character's included, but how much
// of it differs with the Go that builds: its first byte (Go 1.26's
// encoding/json), or all of it (Go 1.27's, built on encoding/json/v2). The
// character is the one that holds the last byte read: data is UTF-8 (see
// checkUTF8), so its first byte is the nearest at or before that one that
// starts a character.
func syntaxErrorChar(data []byte, off int64) (int, bool) {
	if off < 1 || off > int64(len(data)) {
		return 0, false
	}
	at := int(off) - 1
	for at > 0 && !utf8.RuneStart(data[at]) {
		at--
	}
	return at, true
}

// syntaxErrorText is err's text and, for a *json.SyntaxError, where in
// data it is (see placeOf): encoding/json keeps the place in a field, not
// in the error's text. A character JSON refuses there is named as the file
// holds it: Go 1.26's encoding/json quotes the first byte it read, as if it
// were Latin-1 (a no-break space is "'Â'", a byte order mark "'ï'"), and Go
// 1.27's quotes the character as Go does ("'\u00a0'"), so one outside ASCII
// is named by its code point instead (U+00A0); and white space that JSON
// does not allow (a form feed, a no-break space), which a reader of the
// file cannot tell from the space JSON allows, is said to be so.
func syntaxErrorText(data []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	return syntaxErrorIn(data, err.Error(), se.Offset)
}

// syntaxErrorIn is syntaxErrorText for a syntax error of text and Offset
// off in data.
func syntaxErrorIn(data []byte, text string, off int64) string {
	at, ok := syntaxErrorChar(data, off)
	if !ok {
		return text
	}
	return nameRefused(data[at:], text) + placeOf(data, at)
}

// nameRefused is text, the text of a syntax error at the character that
// starts c, with that character named as syntaxErrorText says, when text
// names it ("invalid character " and either quoting of it); else text.
func nameRefused(c []byte, text string) string {
	const prefix = "invalid character "
	r, _ := utf8.DecodeRune(c) // c is UTF-8: see checkUTF8
	quoted := ""
	for _, q := range []string{
		"'" + strings.Trim(strconv.Quote(string(rune(c[0]))), `"`) + "'", // Go 1.26's: the first byte
		strconv.QuoteRune(r), // Go 1.27's: the character
	} {
		if strings.HasPrefix(text, prefix+q) {
			quoted = q
			break
		}
	}
	if quoted == "" {
		return text
	}
	name := quoted
	if c[0] >= utf8.RuneSelf {
		name = fmt.Sprintf("%U", r)
	}
	if unicode.IsSpace(r) {
		name += " (white space, but not JSON's: only space, tab, CR and LF are)"
	}
	return prefix + name + text[len(prefix+quoted):]
}

// placeOf names the byte at of data as ", at line L, column C (byte B)":
// the line and column count from 1, in bytes; the byte from 0.
func placeOf(data []byte, at int) string {
	line := 1 + bytes.Count(data[:at], []byte{'\n'})
	column := at - bytes.LastIndexByte(data[:at], '\n')
	return fmt.Sprintf(", at line %d, column %d (byte %d)", line, column, at)
}

// checkUTF8 returns an error, naming the place of the first bad byte (see
// placeOf) and what comes before it, when data is not UTF-8, and one naming the escape
// when data holds a \u escape of half a UTF-16 surrogate pair (see
// checkEscapes). encoding/json would read each such byte or escape as
// U+FFFD: a name written in another encoding (a "café" in Latin-1) would
// become a name no request gives, and its rule would never apply.
func checkUTF8(data []byte) error {
	if utf8.Valid(data) {
		return checkEscapes(data)
	}
	at := 0
	for at < len(data) {
		r, size := utf8.DecodeRune(data[at:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		at += size
	}
	return fmt.Errorf("service: rules: a byte that is not UTF-8, as JSON text must be (a file saved in another encoding?)%s, after %q: %w",
		placeOf(data, at), textBefore(data, at), hotlimit.ErrInvalidConfig)
}

// textBefore returns the text of data before the byte at, up to 16 bytes of
// it, starting on a character: an error shows it after the place it names,
// to find that place by eye.
func textBefore(data []byte, at int) []byte {
	from := max(0, at-16)
	for from < at && !utf8.RuneStart(data[from]) {
		from++
	}
	return data[from:at]
}

// checkEscapes returns an error, naming its place, at the first \u escape
// in data of half a UTF-16 surrogate pair ("\udc00" alone, or "\ud83d" not
// followed by the escape of a low half): it names no character, and
// encoding/json would read it as U+FFFD. data is UTF-8; in JSON a backslash
// appears only in a string, where it starts an escape, so the escapes are
// found without reading the strings. Text that is not JSON is left to the
// decoder to refuse.
func checkEscapes(data []byte) error {
	for at := 0; ; {
		i := bytes.IndexByte(data[at:], '\\')
		if i < 0 {
			return nil
		}
		at += i
		r, ok := escapedRune(data[at:])
		switch {
		case !ok: // not a \u escape: skip the backslash and the byte it escapes
			at = min(at+2, len(data))
			continue
		case r < 0xd800 || r > 0xdfff:
			at += 6
			continue
		case r <= 0xdbff:
			if low, ok := escapedRune(data[at+6:]); ok && low >= 0xdc00 && low <= 0xdfff {
				at += 12
				continue
			}
		}
		return fmt.Errorf("service: rules: the escape %s is half of a UTF-16 surrogate pair, which is no character (it would be read as U+FFFD)%s, after %q: %w",
			data[at:at+6], placeOf(data, at), textBefore(data, at), hotlimit.ErrInvalidConfig)
	}
}

// escapedRune returns the code unit of the \uXXXX escape data starts with,
// and whether it starts with one.
func escapedRune(data []byte) (rune, bool) {
	if len(data) < 6 || data[0] != '\\' || data[1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range data[2:6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// decodePair reads one element of "pairs".
func decodePair(path string, data []byte) (Pair, Limits, error) {
	fields, err := jsonobj.Object(data, hotlimit.ErrInvalidConfig, "user", "api", "limits")
	if err != nil {
		return Pair{}, nil, fmt.Errorf("service: %s: %w", path, err)
	}
	var p Pair
	for _, f := range []struct {
		name string
		dst  *string
	}{{"user", &p.User}, {"api", &p.API}} {
		raw, ok := fields[f.name]
		if !ok || string(raw) == "null" {
			return Pair{}, nil, fmt.Errorf("service: %s.%s: missing: %w", path, f.name, hotlimit.ErrInvalidConfig)
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			return Pair{}, nil, fmt.Errorf("service: %s.%s: want a string, got %s: %w", path, f.name, jsonobj.Kind(raw), hotlimit.ErrInvalidConfig)
		}
	}
	raw, ok := fields["limits"]
	if !ok {
		return Pair{}, nil, fmt.Errorf("service: %s.limits: missing: %w", path, hotlimit.ErrInvalidConfig)
	}
	ls, err := decodeLimits(path+".limits", raw)
	return p, ls, err
}

// decodeLimits reads one rule, a non-empty list of limits, naming each
// element's path in errors.
func decodeLimits(path string, data []byte) (Limits, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil || list == nil {
		return nil, fmt.Errorf("service: %s: want an array of limits, got %s: %w", path, jsonobj.Kind(data), hotlimit.ErrInvalidConfig)
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("service: %s: a rule needs at least one limit: %w", path, hotlimit.ErrInvalidConfig)
	}
	ls := make(Limits, len(list))
	for i, raw := range list {
		if err := json.Unmarshal(raw, &ls[i]); err != nil {
			var fe *hotlimit.FieldError
			if errors.As(err, &fe) {
				return nil, fmt.Errorf("service: %s[%d].%s: %w", path, i, fe.Field, fe.Err)
			}
			return nil, fmt.Errorf("service: %s[%d]: %w", path, i, err)
		}
	}
	return ls, nil
}

// LoadRules reads rules in the JSON form documented on [Rules] from r, and
// validates them as [Rules.Validate] does. Errors name the offending entry,
// as in `users["alice"][1].window: ...` or `apis["GET /search"][0]: hotlimit:
// Config.Limit ... out of range ... for TokenBucket`, and wrap
// hotlimit.ErrInvalidConfig, except errors
// reading r. Anything after the JSON object but white space is an error, and
// so is a nil r. A byte order mark at the start, which some editors write, is
// ignored. An error in the text itself (a syntax error, text after the
// object, a byte that is not UTF-8) names its place as "at line L, column
// C (byte B)": line and column count from 1, in bytes, as Go's compiler
// counts them (an "é" is two columns, a byte order mark three), and the
// byte, the file's offset, from 0; a character refused there that is
// outside ASCII is named by its code point (U+00A0), and white space that
// JSON does not allow is said to be so. A file cut short ("unexpected
// EOF") has no place to name but its end; an empty one (or one of white
// space only: JSON's, as a file of a no-break space is not) is said to be
// empty.
func LoadRules(r io.Reader) (Rules, error) {
	if nilness.Is(r) {
		return Rules{}, errors.New("service: reading rules: no reader (nil)")
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return Rules{}, fmt.Errorf("service: reading rules: %w", err)
	}
	if err := checkUTF8(data); err != nil { // UnmarshalJSON's check, at the file's offsets
		return Rules{}, err
	}
	if bytes.HasPrefix(data, byteOrderMark) {
		// Written by some editors, refused by encoding/json as an
		// invalid character, and one RFC 8259 lets a parser ignore:
		// blanked, so that the places errors name stay the file's.
		copy(data, "   ")
	}
	if len(bytes.TrimLeft(data, " \t\r\n")) == 0 {
		// encoding/json would say "EOF": a file an editor or a deploy
		// truncated, or a ConfigMap key left empty, is said as such.
		return Rules{}, fmt.Errorf("service: rules are empty, want a JSON object with a \"default\" rule: %w", hotlimit.ErrInvalidConfig)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return Rules{}, fmt.Errorf("service: rules are not JSON: %s: %w", syntaxErrorText(data, err), hotlimit.ErrInvalidConfig)
	}
	// After Decode, InputOffset is the end of the object.
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return Rules{}, fmt.Errorf("service: rules: more after the JSON object%s: %w", placeOf(data, len(data)-len(rest)), hotlimit.ErrInvalidConfig)
	}
	var rules Rules
	if err := rules.UnmarshalJSON(raw); err != nil {
		return Rules{}, err
	}
	if err := rules.Validate(); err != nil {
		return Rules{}, err
	}
	return rules, nil
}
