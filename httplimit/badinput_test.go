package httplimit_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestBadInputToTheMiddleware gives New, its options, its key functions
// and the package's helpers what a careless caller could: no service or
// one New did not make, nil handlers, options and functions, requests
// without a header, URL or context, canceled requests, key functions that
// return keys not UTF-8, prefixes and counts at the ends of their types.
// Each gets its documented answer, and nothing panics.
func TestBadInputToTheMiddleware(t *testing.T) {
	cfg := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Minute}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	get := func() *http.Request { return httptest.NewRequest(http.MethodGet, "/x", nil) }
	serve := func(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	newSvc := func(t *testing.T) *service.Service {
		svc, err := service.New(cfg)
		require.NoError(t, err)
		return svc
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"no service is 500", func(t *testing.T) {
			for _, svc := range []*service.Service{nil, {}} {
				assert.Equal(t, http.StatusInternalServerError, serve(httplimit.New(svc)(ok), get()).Code)
			}
		}},
		{"a nil handler is NotFound", func(t *testing.T) {
			assert.Equal(t, http.StatusNotFound, serve(httplimit.New(newSvc(t))(nil), get()).Code)
			assert.Equal(t, http.StatusNotFound, serve(httplimit.New(newSvc(t))(http.HandlerFunc(nil)), get()).Code)
		}},
		{"nil options and functions are the defaults", func(t *testing.T) {
			h := httplimit.New(newSvc(t), nil, httplimit.WithAPI(nil), httplimit.WithUser(nil), httplimit.WithDenyHandler(nil),
				httplimit.WithExempt(nil), httplimit.WithObserver(nil), httplimit.WithPolicyName(nil))(ok)
			assert.Equal(t, http.StatusNoContent, serve(h, get()).Code)
			assert.Equal(t, http.StatusTooManyRequests, serve(h, get()).Code)
		}},
		{"requests without a URL, header or address are limited", func(t *testing.T) {
			h := httplimit.New(newSvc(t))(ok)
			noURL := get()
			noURL.URL = nil
			noHeader := get()
			noHeader.Header, noHeader.RemoteAddr = nil, ""
			bare := &http.Request{Method: http.MethodGet}
			for _, r := range []*http.Request{noURL, noHeader, bare} {
				assert.NotEqual(t, http.StatusInternalServerError, serve(h, r).Code)
			}
		}},
		{"a canceled request is not served", func(t *testing.T) {
			assert.Equal(t, http.StatusServiceUnavailable, serve(httplimit.New(newSvc(t))(ok), get().WithContext(canceled)).Code)
		}},
		{"a closed service still limits", func(t *testing.T) {
			svc := newSvc(t)
			require.NoError(t, svc.Close())
			h := httplimit.New(svc)(ok)
			assert.Equal(t, http.StatusNoContent, serve(h, get()).Code)
			assert.Equal(t, http.StatusTooManyRequests, serve(h, get()).Code)
		}},
		{"keys that are not UTF-8, empty or huge are keys", func(t *testing.T) {
			for _, key := range []string{"\xff", "", strings.Repeat("k", 1<<20)} {
				h := httplimit.New(newSvc(t), httplimit.WithUser(func(*http.Request) (string, bool) { return key, true }))(ok)
				assert.Equal(t, http.StatusNoContent, serve(h, get()).Code, "%.8q", key)
				assert.Equal(t, http.StatusTooManyRequests, serve(h, get()).Code, "%.8q", key)
			}
		}},
		{"key functions of nothing find nothing", func(t *testing.T) {
			for name, f := range map[string]httplimit.KeyFunc{
				"Header empty": httplimit.Header(""), "ContextValue nil": httplimit.ContextValue(nil),
				"FirstOf nils": httplimit.FirstOf(nil, nil), "FirstOf none": httplimit.FirstOf(),
				"Tag nil": httplimit.Tag("", nil), "Tag not UTF-8": httplimit.Tag("\xff", httplimit.Header("X")),
			} {
				k, found := f(get())
				assert.False(t, found, name)
				assert.Empty(t, k, name)
			}
		}},
		{"RoutePattern of no mux is the path", func(t *testing.T) {
			k, found := httplimit.RoutePattern(nil)(get())
			assert.True(t, found)
			assert.Equal(t, "/x", k)
		}},
		{"ClientIP options out of range are clamped", func(t *testing.T) {
			for _, opts := range [][]httplimit.IPOption{
				{nil, httplimit.TrustProxies(netip.Prefix{}), httplimit.IPv4Prefix(-1), httplimit.IPv6Prefix(math.MaxInt), httplimit.ProxyHeader(""), httplimit.TrustNonIPPeers()},
				{httplimit.IPv4Prefix(math.MinInt), httplimit.IPv6Prefix(math.MinInt)},
				{httplimit.IPv4Prefix(math.MaxInt), httplimit.TrustProxies()},
			} {
				k, found := httplimit.ClientIP(opts...)(get())
				assert.True(t, found)
				assert.True(t, strings.HasPrefix(k, "ip:"), k)
			}
		}},
		{"helpers of zero values", func(t *testing.T) {
			w := httptest.NewRecorder()
			httplimit.DenyProblem(w, get(), httplimit.Event{})
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			w = httptest.NewRecorder()
			httplimit.DenyProblem(w, nil, httplimit.Event{})
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
			noHeader := get()
			noHeader.Header, noHeader.Method = nil, http.MethodOptions
			assert.False(t, httplimit.IsPreflight(noHeader))
			assert.Equal(t, "algorithm(0)-0-0s", httplimit.PolicyName(hotlimit.Config{}))
			assert.NotEmpty(t, httplimit.PolicyName(hotlimit.Config{Algorithm: 200, Limit: math.MinInt, Window: math.MinInt64, Burst: -1, Scope: 9}))
			assert.NotEmpty(t, httplimit.HeaderKey("\xff", "\x00\xff"))
		}},
		{"a nil request panics, as a handler's does", func(t *testing.T) {
			assert.Panics(t, func() { serve(httplimit.New(newSvc(t))(ok), nil) })
			assert.Panics(t, func() { httplimit.IsPreflight(nil) })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.NotPanics(t, func() { tc.check(t) }) })
	}
}
