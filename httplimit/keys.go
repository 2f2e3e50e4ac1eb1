package httplimit

import (
	"encoding/hex"
	"net/http"
	"net/textproto"
	"path"
	"strings"

	"github.com/hotlimit/hotlimit/internal/transport"
)

// KeyFunc finds a key of a request: the user or the API it is limited under.
// ok is false when the request carries none (a missing header, say), which
// lets [FirstOf] try the next source; key is then ignored. A KeyFunc must be
// safe for concurrent use.
//
// The user key functions of this package tag every key with its kind, kind
// ":" value, so that keys from different sources never share a quota: the
// API key "203.0.113.9" is "header:x-api-key:203.0.113.9", a namespace of its
// own, and the client at that address is "ip:203.0.113.9". Rules name users
// by their tagged keys (see [HeaderKey]). Wrap a KeyFunc of your own in
// [Tag] to give its keys a kind.
type KeyFunc func(r *http.Request) (key string, ok bool)

// Header returns a KeyFunc that reads the first value of the header name,
// such as "X-API-Key", and tags it with the kind "header:" and the name in
// lower case: "header:x-api-key:k-123" (see [HeaderKey]). An absent or empty
// header, or one of spaces and tabs alone, finds no key. The value is the
// field value, without the spaces and tabs around it (which HTTP/1.1 strips
// and Go's HTTP/2 server keeps, so that "k-123 " is k-123 over both), and
// otherwise used as sent: unless something before the middleware
// authenticates it, a client can claim any key, so use it for keys that are
// checked (API keys validated by an earlier handler) or when a claimed
// identity is acceptable. It cannot claim another kind's key: the tag
// keeps a header value that reads like an address apart from that address.
//
// Header("Host") reads r.Host, where net/http puts the host of a request
// it serves, taking it out of r.Header: the Host header, an HTTP/2
// request's :authority, or the authority of an absolute-form request
// target ("GET http://a.example/ HTTP/1.1"), which RFC 9112 makes the host
// in place of the Host header. The key is that host in a canonical form,
// so that the spellings of one host share its quota and the rule that
// names it: in lower case, since a host name's case carries no meaning;
// without one trailing dot, the name written fully qualified; and without
// the port when it is a default port of the web, 443 or 80, whatever the
// scheme the request came by (a proxy that ends TLS forwards ":443" over
// plain HTTP). So "API.Example.com", "api.example.com." and
// "api.example.com:443" are all "header:host:api.example.com". Any other
// port stays, as a host of its own ("api.example.com:8443"). A port's
// leading zeros are dropped and an empty port is none ("api.example.com:"
// is api.example.com); an IPv6 literal keeps its brackets, in its RFC 5952
// text, and loses a default port too ("[::1]:443" is "[::1]"). A host that
// is none of these (":443", "::1" without brackets, "[::1", a port past
// 65535, a space inside) is kept as sent, in lower case: a key of its own,
// never another host's. A request without a host (HTTP/1.0 without a Host
// header, or an empty one) finds no key. A client writes the host as
// freely as any other header, a port of its choosing included: a limit
// per host bounds the clients that name a host plainly, not one that
// means to spend more.
//
// A value longer than 256 bytes is keyed by its SHA-256 instead, as
// "header-sha256:x-api-key:" and the digest in hex, so that a client sending
// huge values cannot make each of its keys pin that much memory; distinct
// values still have distinct keys, and [HeaderKey] makes the same key.
//
// The name is read as [ProxyHeader] reads it: spaces and tabs around it are
// dropped (" X-API-Key" is X-API-Key), and its case does not matter. A name
// that is then no HTTP field name (empty, or holding a space, a colon, a
// byte outside printable ASCII) finds no key in any request.
func Header(name string) KeyFunc {
	name = strings.Trim(name, " \t")
	if !transport.IsToken(name) {
		return func(*http.Request) (string, bool) { return "", false }
	}
	key := textproto.CanonicalMIMEHeaderKey(name)
	keys := transport.NewHeaderKeys(name)
	if key == "Host" {
		// net/http moves the Host header (HTTP/2's :authority) of a
		// request it serves to r.Host, out of r.Header.
		return func(r *http.Request) (string, bool) {
			if s := keys.Value(r.Host); s != "" {
				return keys.Key(s), true
			}
			return "", false
		}
	}
	return func(r *http.Request) (string, bool) {
		if v := r.Header[key]; len(v) > 0 {
			if s := keys.Value(v[0]); s != "" {
				return keys.Key(s), true
			}
		}
		return "", false
	}
}

// HeaderKey returns the key that [Header](name) finds in a request whose
// header name holds value, for rules: HeaderKey("X-API-Key", "premium") is
// "header:x-api-key:premium". grpclimit's metadata keys are the same, so one
// rule set names the same callers over HTTP and gRPC. A value longer than 256
// bytes gives its digest's key, as Header does, spaces and tabs around
// name and value are dropped, as Header drops them, and a Host value is
// put in the canonical form of Header("Host"): HeaderKey("Host",
// "API.Example.com.:443") is "header:host:api.example.com", the key of
// every spelling of that host, with or without its port 443 or 80.
func HeaderKey(name, value string) string {
	keys := transport.NewHeaderKeys(strings.Trim(name, " \t"))
	return keys.Key(keys.Value(value))
}

// ContextValue returns a KeyFunc that reads the value stored under key in the
// request's context, as authentication middleware does with the user it has
// verified. A string is used as is and a fmt.Stringer through its String
// method; anything else, a nil pointer (an anonymous caller, say) or an empty
// result finds no key. The key is tagged with the kind "context:" and the Go
// type of key as %T writes it, as in "context:auth.userKey:alice": the
// name of the type's package, not its path, and not the key's value. So
// context keys of types whose names differ are distinct kinds, but keys of
// types of one name in two packages of one name (auth.userKey of two
// packages named auth), or several keys of one type (userKey and tenantKey,
// two constants of a type ctxKey), are one kind: a value read under one is
// the same key as that value read under another, and shares its quota and
// its rules. When one service limits two such sources, give each a kind of
// its own with [Tag] (Tag("sso", ContextValue(sso.UserKey))).
//
// The value is there only when the middleware that stores it runs first:
// wrap the limiter in it, auth(limit(mux)). Wrapped the other way,
// limit(auth(mux)), it finds no key for any request, and every request
// shares the quota of the empty user (or the next key function of a
// [FirstOf]).
func ContextValue(key any) KeyFunc {
	prefix := transport.ContextKind(key)
	return func(r *http.Request) (string, bool) {
		if s, ok := transport.ContextString(r.Context().Value(key)); ok {
			return prefix + s, true
		}
		return "", false
	}
}

// Tag returns a KeyFunc whose keys are f's tagged with kind: kind ":" key.
// Use it for key functions of your own, with a kind that no other source
// uses and that contains no colon ("tenant", "session"), so that their keys
// cannot collide with the tagged keys of this package. A nil f finds no key,
// and so does an empty key from f, as an empty header does: every such
// request would otherwise share the one key kind ":".
//
// Keys are kept as f returns them, for as long as their state: unlike
// [Header], Tag does not bound them. When f reads a value the client
// chooses (a cookie, a query parameter), bound it in f, as Header does
// with a digest, or a client sending a new value of most of a megabyte
// with each request pins that much per request.
func Tag(kind string, f KeyFunc) KeyFunc {
	prefix := kind + ":"
	return func(r *http.Request) (string, bool) {
		if f == nil {
			return "", false
		}
		if k, ok := f(r); ok && k != "" {
			return prefix + k, true
		}
		return "", false
	}
}

// FirstOf returns a KeyFunc that asks each of fns in turn and returns the
// first key found that is not empty. Nil entries are skipped. Since every key carries its kind,
// a key found by one source never equals a key found by another.
func FirstOf(fns ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, bool) {
		for _, f := range fns {
			if f == nil {
				continue
			}
			if k, ok := f(r); ok && k != "" {
				return k, true
			}
		}
		return "", false
	}
}

// RoutePattern returns a KeyFunc for the API: when mux is not nil, the
// pattern mux would route the request to (the middleware wraps the mux);
// else, or when mux has no route for it, r.Pattern when a ServeMux has
// already routed the request (the middleware wraps a handler registered in
// the mux); else the URL path, cleaned as ServeMux
// cleans it (repeated slashes, "." and ".." elements resolved, a trailing
// slash kept), so that "//login", "/./login" and "/x/../login" count
// against the rule of "/login" instead of each having a quota of its own. A
// cleaned path longer than 256 bytes is kept as its first 256 bytes, " sha256:"
// and the hex digest of the whole path, so that a client inventing huge
// paths cannot make each key pin that much memory, while distinct paths keep
// distinct keys. It finds no key only for a request without a URL. A
// CONNECT request that mux redirects to its path and a slash counts as one
// mux does not route: for that redirect alone, ServeMux names the path the
// client sent, not a pattern.
//
// The API follows the route that serves the request, however the client
// spells the path: a ServeMux routes "/%6Cogin" and "/login?a=1" to
// "/login", "/dir/x" to "/dir/", and a HEAD request to "GET /search", and so
// does RoutePattern. Like ServeMux, it keeps the case of the path and a
// trailing slash: "/Login" and "/login/" are other paths than "/login", as
// they are other routes to the mux (which answers 404 unless it has routes
// for them). A router that folds case or trailing slashes serves all of them
// by one route; give the middleware, with [WithAPI], a KeyFunc that folds
// them as that router does (strings.ToLower of RoutePattern(nil)'s key, say),
// or a client spends one quota per spelling.
//
// Around a router that is not a ServeMux, with no ServeMux routing to the
// middleware either, RoutePattern(nil) is the path, parameters included: a route such as "/payments/{id}" of chi or
// gorilla/mux gives every id a quota of its own under a limit counted per
// pair or per API, and a client that varies the id is never limited there.
// Name the route with a KeyFunc of your own (see the package doc).
//
// Routes are not tagged: the API of a rule is the route as the ServeMux
// writes it ("GET /search"), the API dimension holds routes unless [WithAPI]
// says otherwise, and a route starts with a method or a '/' rather than a
// lower-case kind and a colon.
//
// The middleware uses RoutePattern of the handler it wraps when that handler
// is a *http.ServeMux, and RoutePattern(nil) otherwise, unless [WithAPI] says
// differently. Pass the mux explicitly when something else sits between the
// middleware and the mux. Something that rewrites the path on the way, such
// as http.StripPrefix, belongs outside the middleware
// (http.StripPrefix("/api", httplimit.New(svc)(mux))): mux is asked about the
// request as the middleware sees it, and a path it does not route, as an
// unstripped one, falls back to the URL path, so a route such as
// "/items/{id}" would give every id a quota of its own.
func RoutePattern(mux *http.ServeMux) KeyFunc {
	return func(r *http.Request) (string, bool) {
		// mux comes first: an outer ServeMux that mounted the middleware
		// ("/api/" handing its subtree to it) has set r.Pattern to its own,
		// coarser route, while mux is the one that serves the request.
		if mux != nil && r.URL != nil {
			if _, p := mux.Handler(r); p != "" && !connectRedirect(r, p) {
				return p, true
			}
		}
		if r.Pattern != "" {
			return r.Pattern, true
		}
		if r.URL == nil {
			return "", false
		}
		return boundPath(cleanPath(r.URL.Path)), true
	}
}

// connectRedirect reports whether p, which a ServeMux's Handler returned
// for r, is the path of a trailing-slash redirect rather than a pattern. A
// ServeMux gives a pattern for every route and redirect it finds, except
// for a CONNECT request whose path, with a slash appended, matches a
// route: it redirects there and gives that path, path.Clean'd, as the
// pattern. The client chose it, and it may be most of a megabyte, so it is
// no API key; the mux answers the request itself, as one it does not route.
// No pattern equals a path it does not match ("/a/" matches no "/a").
func connectRedirect(r *http.Request, p string) bool {
	path := r.URL.Path
	return r.Method == http.MethodConnect && strings.HasPrefix(path, "/") && !strings.HasSuffix(path, "/") &&
		len(p) > 1 && p[len(p)-1] == '/' && p[:len(p)-1] == cleanPath(path)
}

// maxPathKey is the longest path that the path fallback keeps as it is.
const maxPathKey = 256

// boundPath returns p when it is at most maxPathKey bytes long, and
// otherwise its first maxPathKey bytes followed by " sha256:" and the hex
// SHA-256 of all of p: a key is held as long as its state, and a client
// may invent paths of most of a megabyte (http.Server's default header
// limit). The result is then longer than maxPathKey, so it never equals a
// path kept as it is; two long paths share it only if they share a digest.
func boundPath(p string) string {
	if len(p) <= maxPathKey {
		return p
	}
	sum := transport.Digest(p)
	return p[:maxPathKey] + " sha256:" + hex.EncodeToString(sum[:])
}

// cleanPath returns p as ServeMux routes it: path.Clean of p, with p's
// trailing slash kept. A path that does not start with '/' (the "*" of
// "OPTIONS *", the empty path of CONNECT) is returned as it is. A path that
// is already clean is returned without allocating.
func cleanPath(p string) string {
	if p == "" || p[0] != '/' {
		return p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			return p
		}
		return np + "/"
	}
	return np
}
