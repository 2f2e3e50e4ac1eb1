package transport

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hotlimit/hotlimit/internal/nilness"
)

// Kinds of keys. A key is its kind, a colon and the value: "ip:192.0.2.1".
// A kind names where the value came from, so two sources never share a
// namespace. The kinds built here are "ip", "peer", "header:" followed by a
// lower-case field name (or the pseudo-header ":authority"),
// "header-sha256:" followed by one (a value too long to keep, see
// HeaderKeys), and "context:" followed by a Go type; none of them
// is another followed by a colon, which is what keeps the tagging injective:
// kind ":" value determines both.
const (
	// KindIP tags a client IP address or network: "ip:192.0.2.1",
	// "ip:2001:db8:1:2::/64".
	KindIP = "ip"
	// KindPeer tags a peer address that is not an IP address, such as a Unix
	// socket's: "peer:@".
	KindPeer = "peer"
)

// HeaderKind is the kind of a key read from the header (or gRPC metadata
// entry, an HTTP/2 header too) name: "header:" and the name in lower case,
// since field names are case-insensitive. HTTP and gRPC share it, so one set
// of rules names the same callers on both.
func HeaderKind(name string) string { return "header:" + strings.ToLower(name) }

// MaxHeaderValue is the longest header value a key keeps as it was sent;
// see HeaderKeys.
const MaxHeaderValue = 256

// HeaderKeys makes the keys of the values of one header (or gRPC metadata
// entry). A value of at most MaxHeaderValue bytes is kept as it is, under
// HeaderKind: "header:x-api-key:k-123". A longer one is kept as the hex
// SHA-256 of its bytes, under the kind "header-sha256:" and the name:
// "header-sha256:x-api-key:9f86…". A key is held in memory for as long as
// its state, so a client that sends a new value of a megabyte with each
// request would otherwise pin a megabyte per request; the digest bounds every
// key to about a hundred bytes, and distinct values keep distinct keys (a
// SHA-256 collision is not known to be findable). The two kinds keep a value
// that reads like a digest apart from a digest.
type HeaderKeys struct {
	plain, hashed string // "header:name:", "header-sha256:name:"
	host          bool   // the header names a host: Host or :authority
}

// NewHeaderKeys returns the HeaderKeys of the header name.
func NewHeaderKeys(name string) HeaderKeys {
	lower := strings.ToLower(name)
	return HeaderKeys{plain: "header:" + lower + ":", hashed: "header-sha256:" + lower + ":",
		host: lower == "host" || lower == ":authority"}
}

// Value returns the text of a field value v that a key is made of: v
// without the spaces and tabs around it, which are no part of an HTTP
// field's value (RFC 9110 section 5.5; its OWS, and nothing else), and
// for Host and :authority that host in its canonical form (see Host): in
// lower case, without a trailing dot, and without a default port of the
// web, since "API.Example.com", "api.example.com." and
// "api.example.com:443" name one host, and a client must not get a quota
// per spelling of it. An HTTP/1.1 parser strips the whitespace; HTTP/2,
// and so gRPC, forbids it (RFC 9113 section 8.2.1), but Go's HTTP/2
// server and grpc-go pass it on, and a key made of the value as it came
// would change with the whitespace a client adds. Value allocates only
// when Host does.
func (h HeaderKeys) Value(v string) string {
	v = strings.Trim(v, " \t")
	if h.host {
		v = Host(v)
	}
	return v
}

// lowerASCII returns s with its ASCII letters in lower case, s itself when
// it holds no upper-case one. Other bytes are kept: a host name is ASCII,
// and folding the case of other characters would make distinct values one.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Key returns the key of value.
func (h HeaderKeys) Key(value string) string {
	if len(value) <= MaxHeaderValue {
		return h.plain + value
	}
	sum := Digest(value)
	return h.hashed + hex.EncodeToString(sum[:])
}

// IsToken reports whether s is a token of RFC 9110 section 5.6.2, as a
// field name is: one or more of the visible ASCII characters other than the
// delimiters "(),/:;<=>?@[\]{}.
func IsToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Tag returns value tagged with kind: kind ":" value.
func Tag(kind, value string) string { return kind + ":" + value }

// Kind returns the kind of a tagged key: the text before its first colon,
// or before its second one for the two-part kinds "header:name",
// "header-sha256:name" and "context:type". A header name may be a
// pseudo-header's, whose own leading colon is part of it:
// "header::authority:api.example.com" is of the kind "header::authority".
// A key without a colon has the empty kind.
func Kind(key string) string {
	kind, rest, ok := strings.Cut(key, ":")
	if !ok {
		return ""
	}
	if kind == "header" || kind == "header-sha256" || kind == "context" {
		from := 0
		if kind != "context" && strings.HasPrefix(rest, ":") {
			from = 1 // a pseudo-header's colon, not the end of the name
		}
		if i := strings.IndexByte(rest[from:], ':'); i >= 0 {
			return kind + ":" + rest[:from+i]
		}
	}
	return kind
}

// ContextKind returns the prefix of the keys read from a context value
// stored under key: "context:", the Go type of key as %T writes it, and a
// colon, as in "context:auth.userKey:". Colons in the type's text (a struct
// tag's, say) become '_', so that Kind finds the kind's end; rules name
// users by these keys, so the text never changes.
//
// %T writes the name of the type's package, not its path, and not the key's
// value: two types of one name in two packages of one name (auth.userKey of
// two packages named auth), or several keys of one type (userKey and
// tenantKey, two constants of a type ctxKey), are one kind. A value read
// under one is then the same key as that value read under another, and
// shares its quota and its rules; the transports' Tag gives each source a
// kind of its own.
func ContextKind(key any) string {
	return "context:" + strings.ReplaceAll(fmt.Sprintf("%T", key), ":", "_") + ":"
}

// ContextString returns the text of a context value that names a caller: a
// string as it is, a fmt.Stringer through String. ok is false for anything
// else, for an empty text, and for a nil pointer (or other nil value) behind
// the Stringer, as authentication middleware may store for an anonymous
// caller: its String would dereference nil, and nil names nobody.
func ContextString(v any) (s string, ok bool) {
	switch v := v.(type) {
	case string:
		return v, v != ""
	case fmt.Stringer:
		if nilness.HoldsNil(v) {
			return "", false
		}
		s = v.String()
		return s, s != ""
	}
	return "", false
}
