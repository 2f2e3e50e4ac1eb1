package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// preflight returns a browser's CORS preflight for a POST to target.
func preflight(target, remote string) *http.Request {
	r := httptest.NewRequest(http.MethodOptions, target, nil)
	r.RemoteAddr = remote
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", http.MethodPost)
	return r
}

// TestPreflightSpendsTheRouteQuotaUnlessSkipped: a browser with one request
// left sends a preflight, then its real request. By default the preflight is
// a request like any other and the real one is denied; WithSkip(IsPreflight)
// lets the preflight through without spending, so the real request passes.
// An OPTIONS request without the preflight's headers is never skipped.
func TestPreflightSpendsTheRouteQuotaUnlessSkipped(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []httplimit.Option
		want []int // preflight, POST
	}{
		{"default", nil, []int{http.StatusNoContent, http.StatusTooManyRequests}},
		{"skip preflight", []httplimit.Option{httplimit.WithSkip(httplimit.IsPreflight)}, []int{http.StatusNoContent, http.StatusOK}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			mux := http.NewServeMux()
			mux.HandleFunc("/api/data", func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodOptions { // the route answers its preflights
					w.Header().Set("Access-Control-Allow-Origin", "*")
					w.WriteHeader(http.StatusNoContent)
					return
				}
				ok(w, r)
			})
			h := httplimit.New(svc, tc.opts...)(mux)
			pre := serve(h, preflight("/api/data", "192.0.2.1:1"))
			post := httptest.NewRequest(http.MethodPost, "/api/data", nil)
			post.RemoteAddr = "192.0.2.1:1"
			got := []int{pre.Code, serve(h, post).Code}
			assert.Equal(t, tc.want, got)
			if tc.opts != nil {
				assert.Empty(t, pre.Header().Get("RateLimit"), "a skipped request is not limited, so not advertised")
			}
		})
	}

	// Only a preflight is skipped: a plain OPTIONS request spends quota.
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	h := httplimit.New(svc, httplimit.WithSkip(httplimit.IsPreflight))(ok)
	plain := preflight("/x", "192.0.2.1:1")
	plain.Header.Del("Access-Control-Request-Method")
	assert.Equal(t, http.StatusOK, serve(h, plain).Code)
	assert.Equal(t, http.StatusOK, serve(h, preflight("/x", "192.0.2.1:1")).Code, "skipped even with no quota left")
	assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/x", "192.0.2.1:1")).Code, "the plain OPTIONS spent the quota")
}

// TestPreflightUnderAMethodPatternCountsApart: the mux answers a preflight
// to "POST /api/data" with 405, and the middleware counts it under the path,
// so it spends nothing of the route's quota.
func TestPreflightUnderAMethodPatternCountsApart(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var apis []string
	mux := http.NewServeMux()
	mux.Handle("POST /api/data", ok)
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) }))(mux)
	assert.Equal(t, http.StatusMethodNotAllowed, serve(h, preflight("/api/data", "192.0.2.1:1")).Code)
	post := httptest.NewRequest(http.MethodPost, "/api/data", nil)
	post.RemoteAddr = "192.0.2.1:1"
	assert.Equal(t, http.StatusOK, serve(h, post).Code)
	assert.Equal(t, []string{"/api/data", "POST /api/data"}, apis)
}

// TestCORSOutsideTheLimiter is the recommended arrangement: the CORS
// middleware answers preflights before the limiter sees them, and its
// headers reach the 429, so a page can read the denial.
func TestCORSOutsideTheLimiter(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	cors := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			w.Header().Set("Access-Control-Expose-Headers", "RateLimit, RateLimit-Policy, Retry-After")
			if httplimit.IsPreflight(r) {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	h := cors(httplimit.New(svc)(ok))
	post := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/api/data", nil)
		r.RemoteAddr = "192.0.2.1:1"
		r.Header.Set("Origin", "https://app.example")
		return serve(h, r)
	}
	require.Equal(t, http.StatusNoContent, serve(h, preflight("/api/data", "192.0.2.1:1")).Code)
	assert.Equal(t, http.StatusOK, post().Code, "the preflight spent nothing")
	denied := post()
	assert.Equal(t, http.StatusTooManyRequests, denied.Code)
	assert.Equal(t, "*", denied.Header().Get("Access-Control-Allow-Origin"), "the page can read the 429")
	assert.NotEmpty(t, denied.Header().Get("Retry-After"))
}
