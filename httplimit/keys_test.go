package httplimit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestAPIKeyCannotSpendAnAddressQuota is the collision attack on a user
// chain of an API key and the client IP: a client sends an API key that reads
// like someone else's address until it is denied. Keys of the two kinds live
// in separate namespaces, so the real client at that address still has its
// whole quota.
func TestAPIKeyCannotSpendAnAddressQuota(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Minute), 0)
	h := httplimit.New(svc, httplimit.WithUser(httplimit.FirstOf(httplimit.Header("X-API-Key"), httplimit.ClientIP())))(ok)

	var attacker []int
	for range 3 {
		attacker = append(attacker, serve(h, get("/", "198.51.100.66:4444", "X-API-Key", "203.0.113.9")).Code)
	}
	assert.Equal(t, []int{200, 200, 429}, attacker, "the attacker spends its own API-key quota")

	var victim []int
	for range 3 {
		victim = append(victim, serve(h, get("/", "203.0.113.9:5555")).Code)
	}
	assert.Equal(t, []int{200, 200, 429}, victim, "the client at 203.0.113.9 keeps its whole quota")
}

func TestKeysAreTaggedWithTheirKind(t *testing.T) {
	r := get("/", "203.0.113.9:5555", "X-Api-Key", "k-1", "X-Tenant", "acme")
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, "u-7"))
	for i, tc := range []struct {
		f    httplimit.KeyFunc
		want string
	}{
		{httplimit.ClientIP(), "ip:203.0.113.9"},
		{httplimit.Header("x-api-key"), "header:x-api-key:k-1"},
		{httplimit.Header("X-API-KEY"), httplimit.HeaderKey("X-Api-Key", "k-1")},
		{httplimit.ContextValue(ctxKey{}), "context:httplimit_test.ctxKey:u-7"},
		{httplimit.Tag("tenant", func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), true }), "tenant:acme"},
	} {
		got, found := tc.f(r)
		assert.True(t, found, "case %d", i)
		assert.Equal(t, tc.want, got, "case %d", i)
	}
	_, found := httplimit.Tag("tenant", nil)(r)
	assert.False(t, found, "a nil KeyFunc finds no key")
	_, found = httplimit.Tag("tenant", httplimit.Header("X-Missing"))(r)
	assert.False(t, found)
}

// Keys carry their kind, so an API key and a client address never share a
// quota, and rules name users by their tagged keys.
func ExampleFirstOf() {
	user := httplimit.FirstOf(httplimit.Header("X-API-Key"), httplimit.ClientIP())

	withKey := httptest.NewRequest(http.MethodGet, "/", nil)
	withKey.RemoteAddr = "198.51.100.66:4444"
	withKey.Header.Set("X-API-Key", "203.0.113.9")
	fromAddr := httptest.NewRequest(http.MethodGet, "/", nil)
	fromAddr.RemoteAddr = "203.0.113.9:5555"

	k1, _ := user(withKey)
	k2, _ := user(fromAddr)
	fmt.Println(k1)
	fmt.Println(k2)
	fmt.Println(httplimit.HeaderKey("X-API-Key", "premium"))
	// Output:
	// header:x-api-key:203.0.113.9
	// ip:203.0.113.9
	// header:x-api-key:premium
}

type account struct{ id string }

func (a *account) String() string { return a.id } // dereferences: panics on nil

// TestContextValueOfANilPointerFindsNoKey stores a nil *account, as
// authentication middleware may for an anonymous caller: the key function
// finds no key, and the chain passes to the client IP, where calling String
// would panic.
func TestContextValueOfANilPointerFindsNoKey(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1"
	r = r.WithContext(context.WithValue(r.Context(), acctKey{}, (*account)(nil)))
	var key string
	var ok bool
	require.NotPanics(t, func() { key, ok = httplimit.ContextValue(acctKey{})(r) })
	assert.False(t, ok)
	assert.Empty(t, key)
	key, ok = httplimit.FirstOf(httplimit.ContextValue(acctKey{}), httplimit.ClientIP())(r)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)

	r = r.WithContext(context.WithValue(r.Context(), acctKey{}, &account{"a-1"}))
	key, ok = httplimit.ContextValue(acctKey{})(r)
	assert.True(t, ok)
	assert.Equal(t, "context:httplimit_test.acctKey:a-1", key)
}

type acctKey struct{}

// TestEmptyKeyIsNoKey: a key function of one's own that reports an empty
// key as found (a token whose tenant claim is empty, say) finds no key
// through Tag and FirstOf, as an empty header does, so the chain passes to
// the client IP instead of putting every such client under the one key
// "tenant:".
func TestEmptyKeyIsNoKey(t *testing.T) {
	empty := func(*http.Request) (string, bool) { return "", true }
	r := get("/", "192.0.2.1:1")
	key, ok := httplimit.Tag("tenant", empty)(r)
	assert.False(t, ok)
	assert.Empty(t, key)
	key, ok = httplimit.FirstOf(httplimit.Tag("tenant", empty), httplimit.ClientIP())(r)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)
	key, ok = httplimit.FirstOf(empty, httplimit.ClientIP())(r)
	assert.True(t, ok)
	assert.Equal(t, "ip:192.0.2.1", key)
}

// TestPathFallbackCannotBeRespelled sends the same path spelled as a router
// that cleans paths still serves it: every spelling must spend the quota of
// the one rule the path names, rather than each getting a fresh one.
func TestPathFallbackCannotBeRespelled(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	require.NoError(t, svc.ConfigureAPI("/login", cfg(hotlimit.FixedWindow, 1, time.Minute)))
	var apis []string
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) }))(ok)
	spellings := []string{"/login", "//login", "/./login", "/x/../login", "/login/.", "/../login"}
	var codes []int
	for _, p := range spellings {
		r := get("/", "192.0.2.1:1")
		r.URL.Path = p
		codes = append(codes, serve(h, r).Code)
	}
	assert.Equal(t, []int{200, 429, 429, 429, 429, 429}, codes, "one quota for every spelling of /login")
	for i, api := range apis {
		assert.Equal(t, "/login", api, "spelling %q", spellings[i])
	}

	// A trailing slash names another route in a ServeMux, and stays.
	for _, tc := range []struct{ path, api string }{
		{"/dir/", "/dir/"}, {"//dir//", "/dir/"}, {"/dir//", "/dir/"}, {"/a/./b/", "/a/b/"}, {"/", "/"}, {"*", "*"},
		{"x/../login", "x/../login"}, // not from the root: as it is, as ServeMux leaves it
	} {
		r := get("/", "192.0.2.1:1")
		r.URL.Path = tc.path
		api, found := httplimit.RoutePattern(nil)(r)
		assert.True(t, found, tc.path)
		assert.Equal(t, tc.api, api, tc.path)
	}
}

// TestNestedMuxRoutesByTheInnerPattern: an outer ServeMux hands "/api/" to
// the middleware around an inner ServeMux, the usual way to mount an API.
// The outer mux has set r.Pattern to "/api/" by then; the API must still be
// the inner mux's route, the one the request is served by and rules name,
// or every route of the inner mux would share the quota of "/api/".
func TestNestedMuxRoutesByTheInnerPattern(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	require.NoError(t, svc.ConfigureAPI("GET /items/{id}", cfg(hotlimit.FixedWindow, 1, time.Minute)))
	var apis []string
	limit := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) }))
	inner := http.NewServeMux()
	inner.Handle("GET /items/{id}", ok)
	inner.Handle("GET /users", ok)
	outer := http.NewServeMux()
	outer.Handle("/api/", http.StripPrefix("/api", limit(inner)))

	var codes []int
	for _, p := range []string{"/api/items/1", "/api/items/2", "/api/users"} {
		codes = append(codes, serve(outer, get(p, "192.0.2.1:1")).Code)
	}
	assert.Equal(t, []string{"GET /items/{id}", "GET /items/{id}", "GET /users"}, apis)
	assert.Equal(t, []int{200, 429, 200}, codes, "the rule of GET /items/{id} applies behind the outer mux")

	// Registered inside a mux, the middleware still takes that mux's pattern.
	apis = nil
	m := http.NewServeMux()
	m.Handle("GET /orders/{id}", limit(ok))
	serve(m, get("/orders/7", "192.0.2.1:1"))
	assert.Equal(t, []string{"GET /orders/{id}"}, apis)
}

// TestLongHeaderValueKeyIsBounded: a client sends a new API key of 64 KiB
// with each request. Each key is held as long as its state, so it must not
// hold the value: a value past 256 bytes is keyed by its digest, bounded in
// length, while distinct values keep distinct quotas and HeaderKey names the
// same key for a rule.
func TestLongHeaderValueKeyIsBounded(t *testing.T) {
	long := strings.Repeat("k", 64<<10)
	h, users := keyedBy(t, httplimit.Header("X-API-Key"), httplimit.HeaderKey("X-API-Key", long+"vip"), 3)

	var codes []int
	for _, v := range []string{long + "1", long + "2", long + "1", long + "vip", long + "vip", long + "vip"} {
		codes = append(codes, serve(h, get("/", "192.0.2.1:1", "X-API-Key", v)).Code)
	}
	assert.Equal(t, []int{200, 200, 429, 200, 200, 200}, codes, "distinct values, distinct quotas; the rule named by HeaderKey applies")
	for i, u := range *users {
		assert.LessOrEqual(t, len(u), 128, "request %d: the key does not hold the value", i)
		assert.True(t, strings.HasPrefix(u, "header-sha256:x-api-key:"), "request %d: %s", i, u)
	}
	assert.NotEqual(t, (*users)[0], (*users)[1])
	assert.Equal(t, (*users)[0], (*users)[2])

	// Up to 256 bytes a value is kept as sent; a short value that reads like
	// a digest's key is still a value of its own kind.
	at := strings.Repeat("a", 256)
	key, found := httplimit.Header("X-API-Key")(get("/", "192.0.2.1:1", "X-API-Key", at))
	assert.True(t, found)
	assert.Equal(t, "header:x-api-key:"+at, key)
	assert.NotEqual(t, (*users)[0], httplimit.HeaderKey("X-API-Key", strings.TrimPrefix((*users)[0], "header-sha256:x-api-key:")))
}

// TestHeaderNameAsWritten: Header and HeaderKey read a name with spaces or
// tabs around it, as a configuration file may hold it, without them, so
// the key is found and a rule names it: Header(" X-API-Key") found no key
// in any request (textproto leaves a name holding a space as it is, and
// net/http keys a request's header by the canonical name), so every client
// fell through to the next source of a FirstOf chain.
func TestHeaderNameAsWritten(t *testing.T) {
	r := get("/", "192.0.2.1:1", "X-API-Key", "k1")
	for _, name := range []string{" X-API-Key", "X-API-Key ", "\tx-api-key\t"} {
		key, found := httplimit.Header(name)(r)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "header:x-api-key:k1", key, "%q", name)
		assert.Equal(t, key, httplimit.HeaderKey(name, "k1"), "%q: the key a rule names", name)
	}
	_, found := httplimit.Header("X API Key")(r)
	assert.False(t, found, "a name that is no field name finds no key")
}

// TestHostHeaderKeysEachHost serves a tenant per host name on a real
// server, keyed by Header("Host"). net/http moves a request's Host header
// to r.Host and out of r.Header, where Header would look for it and never
// find it: every tenant would fall to the keyless quota, and one tenant
// would deny all. Each host has a quota of its own, under the key a rule
// names with HeaderKey.
func TestHostHeaderKeysEachHost(t *testing.T) {
	h, users := keyedBy(t, httplimit.Header("Host"), httplimit.HeaderKey("Host", "big.example"), 2)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(host string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusOK, http.StatusTooManyRequests},
		[]int{get("a.example"), get("big.example"), get("big.example"), get("a.example")})
	assert.Equal(t, []string{"header:host:a.example", "header:host:big.example", "header:host:big.example", "header:host:a.example"}, *users)
	_, found := httplimit.Header("Host")(&http.Request{Header: http.Header{}})
	assert.False(t, found, "a request without a host finds no key")
}

// TestHeaderValueIsTheFieldValueOverHTTP2 sends one API key over HTTP/2
// with whitespace around it. HTTP/1.1 strips that whitespace, which is no
// part of a field value (RFC 9110); Go's HTTP/2 server leaves it in the
// value. Kept, it made each spelling a key of its own: a client holding
// one key, checked by an authentication that trims it as HTTP/1.1 does,
// got a fresh quota per spelling, and a rule naming the key missed it.
// The key is the field value, the same over both protocols.
func TestHeaderValueIsTheFieldValueOverHTTP2(t *testing.T) {
	h, users := keyedBy(t, httplimit.Header("X-API-Key"), httplimit.HeaderKey("X-API-Key", "premium"), 2)
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	get := func(key string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Header.Set("X-API-Key", key)
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 2, resp.ProtoMajor)
		return resp.StatusCode
	}
	assert.Equal(t, []int{http.StatusOK, http.StatusTooManyRequests, http.StatusTooManyRequests, http.StatusOK, http.StatusOK, http.StatusTooManyRequests},
		[]int{get("k1"), get("k1 "), get("\tk1"), get(" premium"), get("premium\t"), get("premium")})
	assert.Equal(t, []string{"header:x-api-key:k1", "header:x-api-key:k1", "header:x-api-key:k1",
		"header:x-api-key:premium", "header:x-api-key:premium", "header:x-api-key:premium"}, *users)
	*users = nil
	assert.Equal(t, []int{http.StatusOK, http.StatusTooManyRequests}, []int{get(" \t "), get(" ")}, "whitespace alone is no key: the keyless quota")
	assert.Equal(t, []string{"", ""}, *users)
}

// TestHostKeyIgnoresCase serves tenants keyed by Header("Host") over
// HTTP/2, where the host is the :authority, and over HTTP/1.1. A host
// name's case carries no meaning: "BIG.example" reaches the tenant that
// "big.example" does, and was a key of its own, so a client got a fresh
// quota per spelling of its host (2^n of them for n letters) and the
// tenant's rule, HeaderKey("Host", "big.example"), missed it. The host
// keeps its port; an absolute-form target's authority is the host, as
// net/http reads it; a request without a host finds no key.
func TestHostKeyIgnoresCase(t *testing.T) {
	h, users := keyedBy(t, httplimit.Header("Host"), httplimit.HeaderKey("Host", "Big.Example"), 2)
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	get := func(host string) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
		require.NoError(t, err)
		req.Host = host
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, 2, resp.ProtoMajor)
		return resp.StatusCode
	}
	assert.Equal(t, []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests, http.StatusOK, http.StatusTooManyRequests},
		[]int{get("big.example"), get("BIG.example"), get("Big.Example"), get("A.example:8443"), get("a.example:8443")})
	assert.Equal(t, []string{"header:host:big.example", "header:host:big.example", "header:host:big.example",
		"header:host:a.example:8443", "header:host:a.example:8443"}, *users)

	host := httplimit.Header("Host")
	h1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, _ := host(r)
		_, _ = io.WriteString(w, key)
	}))
	t.Cleanup(h1.Close)
	for raw, want := range map[string]string{
		"GET / HTTP/1.1\r\nHost: API.Example.com:8080\r\n\r\n":         "header:host:api.example.com:8080",
		"GET http://Abs.Example/x HTTP/1.1\r\nHost: b.example\r\n\r\n": "header:host:abs.example",
		"GET / HTTP/1.0\r\n\r\n":                                       "",
		"GET / HTTP/1.1\r\nHost:\r\n\r\n":                              "",
	} {
		c, err := net.Dial("tcp", h1.Listener.Addr().String())
		require.NoError(t, err)
		_, err = io.WriteString(c, raw)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = c.Close()
		assert.Equal(t, want, string(body), "%q", raw)
	}
}
