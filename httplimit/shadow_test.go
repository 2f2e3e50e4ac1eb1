package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestShadowOnlyRuleAdvertisesNothing: a rule whose every limit is in
// shadow mode, one a minute (and two a minute beside it), over a real
// connection. Shadow mode never denies, but the responses advertised the
// shadow limit, r=0;t=60 from the second request on, with the legacy
// X-RateLimit-Remaining: 0: a client that paces itself by the fields
// waited a minute for a limit nobody enforces, so trying a limit in shadow
// mode changed what clients do. Now a limit in shadow mode is never
// advertised, as the package doc says: every request passes with no
// RateLimit field, and the observer still sees each decision.
func TestShadowOnlyRuleAdvertisesNothing(t *testing.T) {
	one, two := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 2, time.Minute)
	one.Shadow, two.Shadow = true, true
	for _, rule := range []service.Limits{{one}, {one, two}} {
		svc, err := service.NewFromRules(service.Rules{Default: rule})
		require.NoError(t, err)
		var events []httplimit.Event
		srv := httptest.NewServer(httplimit.New(svc, httplimit.WithLegacyHeaders(true),
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok))
		for i := range 3 {
			resp, err := http.Get(srv.URL + "/x")
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, http.StatusOK, resp.StatusCode, "%v request %d: shadow mode never denies", rule, i)
			for _, k := range []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
				assert.Empty(t, resp.Header.Values(k), "%v request %d: %s advertises a limit in shadow mode", rule, i, k)
			}
		}
		srv.Close()
		require.Len(t, events, 3, "%v", rule)
		for i, e := range events {
			assert.True(t, e.Config.Shadow, "%v event %d: the observer is told of the shadow limit", rule, i)
			assert.True(t, e.Decision.Allowed, "%v event %d", rule, i)
		}
		assert.Zero(t, events[2].Decision.Remaining, "%v: the shadow limit counted the requests", rule)
	}
}

// TestShadowLimitBesideARealOneIsNotAdvertised: in a rule of a real limit
// and one in shadow mode, the response lists the real limit alone, however
// much the shadow limit has counted.
func TestShadowLimitBesideARealOneIsNotAdvertised(t *testing.T) {
	real, shadow := cfg(hotlimit.FixedWindow, 10, time.Minute), cfg(hotlimit.FixedWindow, 1, time.Minute)
	shadow.Shadow = true
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{real, shadow}})
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	for i := range 3 {
		w := serve(h, get("/x", "192.0.2.1:1"))
		assert.Equal(t, http.StatusOK, w.Code, "request %d", i)
		assert.Equal(t, []string{`"fixedwindow-10-1m";q=10;w=60`}, w.Header().Values("RateLimit-Policy"), "request %d", i)
		assert.Len(t, w.Header().Values("RateLimit"), 1, "request %d", i)
	}
}

// TestShadowHookHearsTheRequestsKeys: behind the middleware, the service's
// shadow hook hears each request that a per-user limit in shadow mode (2 a
// minute) would have denied, with the user and API the middleware found (a
// header's key, the route's pattern), while every request is served as the
// enforced limit (10 a minute) says.
func TestShadowHookHearsTheRequestsKeys(t *testing.T) {
	shadow := cfg(hotlimit.FixedWindow, 2, time.Minute)
	shadow.Shadow, shadow.Scope = true, hotlimit.PerUser
	type who struct{ user, api string }
	var mu sync.Mutex
	var heard []who
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{cfg(hotlimit.TokenBucket, 10, time.Minute), shadow}},
		service.WithShadowHook(func(user, api string, e hotlimit.Event) {
			mu.Lock()
			defer mu.Unlock()
			heard = append(heard, who{user, api})
		}))
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("GET /pay/{id}", ok)
	srv := httptest.NewServer(httplimit.New(svc, httplimit.WithUser(httplimit.Header("X-User")))(mux))
	defer srv.Close()
	for _, user := range []string{"ann", "ann", "ann", "ann", "bo"} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/pay/7", nil)
		require.NoError(t, err)
		req.Header.Set("X-User", user)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	}
	mu.Lock()
	defer mu.Unlock()
	ann := httplimit.HeaderKey("X-User", "ann")
	assert.Equal(t, []who{{ann, "GET /pay/{id}"}, {ann, "GET /pay/{id}"}}, heard, "ann's third and fourth requests")
}
