package httplimit

import (
	"fmt"
	"net/http"
	"net/textproto"
)

// KeyFunc finds a key of a request: the user or the API it is limited under.
// ok is false when the request carries none (a missing header, say), which
// lets [FirstOf] try the next source. A KeyFunc must be safe for concurrent
// use.
type KeyFunc func(r *http.Request) (key string, ok bool)

// Header returns a KeyFunc that reads the first value of the header name, such
// as "X-API-Key"; an absent or empty header finds no key. The value is used as
// sent: unless something before the middleware authenticates it, a client can
// claim any key, so use it for keys that are checked (API keys validated by an
// earlier handler) or when a claimed identity is acceptable.
func Header(name string) KeyFunc {
	key := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) (string, bool) {
		if v := r.Header[key]; len(v) > 0 && v[0] != "" {
			return v[0], true
		}
		return "", false
	}
}

// ContextValue returns a KeyFunc that reads the value stored under key in the
// request's context, as authentication middleware does with the user it has
// verified. A string is used as is and a fmt.Stringer through its String
// method; anything else, or an empty result, finds no key.
func ContextValue(key any) KeyFunc {
	return func(r *http.Request) (string, bool) {
		switch v := r.Context().Value(key).(type) {
		case string:
			return v, v != ""
		case fmt.Stringer:
			s := v.String()
			return s, s != ""
		}
		return "", false
	}
}

// FirstOf returns a KeyFunc that asks each of fns in turn and returns the
// first key found. Nil entries are skipped.
func FirstOf(fns ...KeyFunc) KeyFunc {
	return func(r *http.Request) (string, bool) {
		for _, f := range fns {
			if f == nil {
				continue
			}
			if k, ok := f(r); ok {
				return k, true
			}
		}
		return "", false
	}
}

// RoutePattern returns a KeyFunc for the API: r.Pattern when a ServeMux has
// already routed the request (the middleware wraps a handler registered in
// the mux); else, when mux is not nil, the pattern mux would route the request
// to (the middleware wraps the mux); else the URL path. It finds no key only
// for a request without a URL.
//
// The middleware uses RoutePattern of the handler it wraps when that handler
// is a *http.ServeMux, and RoutePattern(nil) otherwise, unless [WithAPI] says
// differently. Pass the mux explicitly when something else sits between the
// middleware and the mux.
func RoutePattern(mux *http.ServeMux) KeyFunc {
	return func(r *http.Request) (string, bool) {
		if r.Pattern != "" {
			return r.Pattern, true
		}
		if r.URL == nil {
			return "", false
		}
		if mux != nil {
			if _, p := mux.Handler(r); p != "" {
				return p, true
			}
		}
		return r.URL.Path, true
	}
}
