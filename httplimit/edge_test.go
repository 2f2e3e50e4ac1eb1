package httplimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// preflight returns a browser's CORS preflight for a POST to target.
func preflight(target, remote string) *http.Request {
	r := httptest.NewRequest(http.MethodOptions, target, nil)
	r.RemoteAddr = remote
	r.Header.Set("Origin", "https://app.example")
	r.Header.Set("Access-Control-Request-Method", http.MethodPost)
	return r
}

// TestPreflightSpendsTheRouteQuotaUnlessExempt: a browser with one request
// left sends a preflight, then its real request. By default the preflight is
// a request like any other and the real one is denied; WithExempt(IsPreflight)
// lets the preflight through without spending, so the real request passes.
// An OPTIONS request without the preflight's headers is never exempt.
func TestPreflightSpendsTheRouteQuotaUnlessExempt(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []httplimit.Option
		want []int // preflight, POST
	}{
		{"default", nil, []int{http.StatusNoContent, http.StatusTooManyRequests}},
		{"exempt preflight", []httplimit.Option{httplimit.WithExempt(httplimit.IsPreflight)}, []int{http.StatusNoContent, http.StatusOK}},
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
				assert.Empty(t, pre.Header().Get("RateLimit"), "an exempt request is not limited, so not advertised")
			}
		})
	}

	// Only a preflight is exempt: a plain OPTIONS request spends quota.
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	h := httplimit.New(svc, httplimit.WithExempt(httplimit.IsPreflight))(ok)
	plain := preflight("/x", "192.0.2.1:1")
	plain.Header.Del("Access-Control-Request-Method")
	assert.Equal(t, http.StatusOK, serve(h, plain).Code)
	assert.Equal(t, http.StatusOK, serve(h, preflight("/x", "192.0.2.1:1")).Code, "exempt even with no quota left")
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

// TestEndedRequestSpendsNoQuota: a request whose context has already ended
// (its client left, its deadline passed) reaches the middleware. It must not
// be served, and must take nothing: the client's next request, on the
// quota of one, still passes.
func TestEndedRequestSpendsNoQuota(t *testing.T) {
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for name, ctx := range map[string]context.Context{"canceled": canceled, "deadline": expired} {
		t.Run(name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			var served int
			var events []httplimit.Event
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++; ok(w, r) })
			h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(next)

			w := serve(h, get("/", "192.0.2.1:1").WithContext(ctx))
			assert.Equal(t, http.StatusServiceUnavailable, w.Code)
			assert.Contains(t, w.Body.String(), "ended before it was served")
			assert.Empty(t, w.Header().Get("RateLimit"), "no limiter decided")
			assert.Empty(t, w.Header().Get("Retry-After"))
			assert.Zero(t, served, "an ended request is not served")
			require.Len(t, events, 1)
			assert.ErrorIs(t, events[0].Err, ctx.Err())
			assert.False(t, events[0].Decision.Allowed)

			assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "the ended request took nothing")
			assert.Equal(t, 1, served)
		})
	}
}

// endedBeside serves one request through svc's middleware, then one whose
// context has ended, from the same client, and returns the events of both,
// and serveCtx, which serves one more under ctx and returns its status and
// event.
func endedBeside(t *testing.T, svc *service.Service) (decided, ended httplimit.Event, serveCtx func(ctx context.Context) (int, httplimit.Event)) {
	t.Helper()
	var last httplimit.Event
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { last = e }))(ok)
	serveCtx = func(ctx context.Context) (int, httplimit.Event) {
		last = httplimit.Event{}
		code := serve(h, get("/", "192.0.2.1:1").WithContext(ctx)).Code
		return code, last
	}
	code, decided := serveCtx(context.Background())
	require.Equal(t, http.StatusOK, code)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	code, ended = serveCtx(gone)
	require.Equal(t, http.StatusServiceUnavailable, code)
	return decided, ended, serveCtx
}

// TestEndedRequestNamesThePolicyOthersDo: under the service's burst
// (hotlimit.WithBurst), a request that ended before its decision is
// reported under the same Config and policy name as the requests that were
// decided, the service's burst spelled out, not the limit as the rules give
// it: the observer's series do not split on whether a client left.
func TestEndedRequestNamesThePolicyOthersDo(t *testing.T) {
	svc, err := service.New(cfg(hotlimit.TokenBucket, 10, time.Minute), hotlimit.WithBurst(4))
	require.NoError(t, err)
	decided, ended, _ := endedBeside(t, svc)
	assert.Equal(t, 4, decided.Config.Burst, "a decided request: the service's burst")
	assert.Equal(t, decided.Config, ended.Config, "the ended request names the same limit")
	assert.Equal(t, decided.Policy, ended.Policy)
}

// TestEndedRequestReportsTheLimitOthersDo: a request that ended before its
// decision reports the Decision.Limit of the decided requests: the rule's
// limit, and math.MaxInt under an allow-list rule (Unlimited), whose Config
// has no Limit.
func TestEndedRequestReportsTheLimitOthersDo(t *testing.T) {
	for _, c := range []hotlimit.Config{cfg(hotlimit.TokenBucket, 10, time.Minute), {Algorithm: hotlimit.Unlimited}} {
		svc, err := service.New(c)
		require.NoError(t, err)
		decided, ended, _ := endedBeside(t, svc)
		assert.Equal(t, decided.Decision.Limit, ended.Decision.Limit, "%v", c)
		assert.False(t, ended.Decision.Allowed, "%v", c)
		assert.Zero(t, ended.Decision.Remaining, "%v", c)
	}
}

// TestEndedRequestNamesNoShadowLimit: under a rule whose first limit is in
// shadow mode, a request that ended before its decision names the limit the
// decided requests name, the first one enforced, not the shadow limit,
// which no decided request names.
func TestEndedRequestNamesNoShadowLimit(t *testing.T) {
	shadow := cfg(hotlimit.FixedWindow, 2, time.Minute)
	shadow.Shadow = true
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{shadow, cfg(hotlimit.TokenBucket, 10, time.Minute)}})
	require.NoError(t, err)
	decided, ended, _ := endedBeside(t, svc)
	assert.False(t, decided.Config.Shadow, "a decided request: the limit enforced")
	assert.Equal(t, decided.Config, ended.Config, "the ended request names the same limit")
	assert.Equal(t, decided.Policy, ended.Policy)
}

// TestEndedRequestNamesItsLimitAmongTheRules: under a rule of two limits
// that differ only in scope, the decided requests name the per-user one
// with its scope ("fixedwindow-10-1m-user"), as their RateLimit fields do;
// a request that ended, before its decision or while a limiter that could
// not decide was asked, names it so too, not by the name of the other limit.
func TestEndedRequestNamesItsLimitAmongTheRules(t *testing.T) {
	user := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user.Scope = hotlimit.PerUser
	rules := service.Rules{Default: service.Limits{user, cfg(hotlimit.FixedWindow, 10, time.Minute)}}
	lim := &limitertest.CancelingRefunder{}
	svc, err := service.NewFromRules(rules,
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	decided, before, serveCtx := endedBeside(t, svc)
	require.Equal(t, user, decided.Config)
	require.Equal(t, "fixedwindow-10-1m-user", decided.Policy)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim.Cancel = cancel
	code, during := serveCtx(ctx)
	require.Equal(t, http.StatusServiceUnavailable, code)
	for when, ev := range map[string]httplimit.Event{"before its decision": before, "during its decision": during} {
		require.Error(t, ev.Err, when)
		assert.True(t, ev.Ended, when)
		assert.Equal(t, decided.Config, ev.Config, when)
		assert.Equal(t, decided.Policy, ev.Policy, when)
	}
}

// TestFailOpenPassOfAnEndedRequestIsNotServed: a client sends a request and
// drops it while the middleware asks a limiter that cannot decide (a Redis
// call cut short by the request's context). A failing-open policy passes
// it; serving it would run the handler for a request no limiter counted, so
// a client could reach it without limit by dropping each request at once.
func TestFailOpenPassOfAnEndedRequestIsNotServed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lim := &limitertest.CancelingLimiter{Cancel: cancel}
	svc, err := service.New(cfg(hotlimit.FixedWindow, 1, time.Second),
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	var served int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })
	w := serve(httplimit.New(svc)(next), get("/", "192.0.2.1:1").WithContext(ctx))
	assert.Zero(t, served)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)

	// Under a dry run it is served, as every request is.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	lim.Cancel = cancel2
	serve(httplimit.New(svc, httplimit.WithDryRun(true))(next), get("/", "192.0.2.1:1").WithContext(ctx2))
	assert.Error(t, ctx2.Err(), "the request ended while the limiter was asked")
	assert.Equal(t, 1, served)
}

// TestFailOpenPassPastItsDeadlineIsNotServed: a request whose one limit
// could not decide at its deadline (a Redis client that sets the deadline
// on its socket fails with "i/o timeout", which wraps no context error, a
// little before the context's timer runs) is not served when the failure
// policy passes it, as under a rule of several limits, which gives it
// back: the handler would run for a request its client no longer waits
// for, counted nowhere. A live request is served, the failure policy's
// pass.
func TestFailOpenPassPastItsDeadlineIsNotServed(t *testing.T) {
	lim := &limitertest.UnreachableRefunder{}
	svc, err := service.New(cfg(hotlimit.FixedWindow, 1, time.Second),
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	var served int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ })
	var ev httplimit.Event
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { ev = e }))(next)
	w := serve(h, get("/", "192.0.2.1:1").WithContext(limitertest.PastDeadline(context.Background())))
	assert.Zero(t, served)
	assert.NotEqual(t, http.StatusOK, w.Code)
	assert.True(t, ev.Ended)
	assert.ErrorIs(t, ev.Err, limitertest.ErrUnreachable)

	serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, 1, served, "a live request: the failure policy's pass")
	assert.False(t, ev.Ended)
}

// TestRespelledPathCannotEscapeItsRoute re-spells the paths of a ServeMux's
// routes (a trailing slash added or dropped, another case, repeated slashes,
// dot segments, percent-encoding) and sends each, once the route's quota of
// one is spent, with the middleware around the mux and inside it around a
// plain handler. Whatever spelling reaches a route's handler must count
// against that route's quota, so none may be served; what the mux serves by
// no route (404, a redirect) never reaches a handler.
func TestRespelledPathCannotEscapeItsRoute(t *testing.T) {
	routes := []string{"/login", "/dir/", "GET /search"}
	spellings := []string{
		"/login", "/login/", "/Login", "/LOGIN", "//login", "/./login", "/x/../login", "/%6Cogin", "/login?a=1",
		"/dir/", "/dir", "/Dir/", "/dir//", "/dir/x", "/dir/./x", "/DIR/x",
		"/search", "/search/", "/Search", "//search", "/%73earch",
	}
	for _, arrangement := range []string{"around the mux", "inside the mux"} {
		t.Run(arrangement, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
			for _, route := range routes {
				require.NoError(t, svc.ConfigureAPI(route, cfg(hotlimit.FixedWindow, 1, time.Minute)))
			}
			var servedBy string
			limit := httplimit.New(svc)
			mux := http.NewServeMux()
			for _, route := range routes {
				var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { servedBy = route })
				if arrangement == "inside the mux" {
					h = limit(h)
				}
				mux.Handle(route, h)
			}
			h := http.Handler(mux)
			if arrangement == "around the mux" {
				h = limit(mux)
			}
			// Spend each route's quota.
			for _, p := range []string{"/login", "/dir/", "/search"} {
				servedBy = ""
				w := serve(h, get(p, "192.0.2.1:1"))
				require.Equal(t, http.StatusOK, w.Code, p)
				require.NotEmpty(t, servedBy, p)
			}
			for _, p := range spellings {
				servedBy = ""
				w := serve(h, get(p, "192.0.2.1:1"))
				assert.Empty(t, servedBy, "%s: served by %q past its quota (status %d)", p, servedBy, w.Code)
			}
		})
	}
}

// TestPlainHandlerPathIsExact: with no mux, the API is the path as a
// ServeMux routes it, case and trailing slash kept; a handler that folds
// them gets the same folding from WithAPI, and its spellings share a quota.
func TestPlainHandlerPathIsExact(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	h := httplimit.New(svc)(ok)
	for _, p := range []string{"/login", "/login/", "/Login"} {
		assert.Equal(t, http.StatusOK, serve(h, get(p, "192.0.2.1:1")).Code, "%s: a path of its own", p)
	}

	svc, _ = newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	folded := func(r *http.Request) (string, bool) {
		p, found := httplimit.RoutePattern(nil)(r)
		return strings.ToLower(strings.TrimSuffix(p, "/")), found
	}
	h = httplimit.New(svc, httplimit.WithAPI(folded))(ok)
	var codes []int
	for _, p := range []string{"/login", "/login/", "/Login"} {
		codes = append(codes, serve(h, get(p, "192.0.2.1:1")).Code)
	}
	assert.Equal(t, []int{200, 429, 429}, codes)
}

// TestBurstDenialSaysTheBurst: the problem detail of a token bucket with a
// burst names the burst, the q its RateLimit-Policy advertises.
func TestBurstDenialSaysTheBurst(t *testing.T) {
	c := cfg(hotlimit.TokenBucket, 5, time.Second)
	c.Burst = 20
	svc, _ := newService(t, c, 0)
	h := httplimit.New(svc)(ok)
	for i := range 20 {
		require.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "request %d of the burst", i)
	}
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, `"tokenbucket-5-1s-burst20";q=20;w=4`, w.Header().Get("RateLimit-Policy"))
	assert.Contains(t, w.Body.String(), `(5 requests per 1s, bursts of 20) exceeded`)
}

// TestLongPathKeyIsBounded: with no mux, a client invents a new path of
// 64 KiB with each request. Each key is held as long as its state, so it
// must not hold the path: a path past 256 bytes is keyed by its digest,
// bounded in length, while distinct paths keep distinct quotas and a path of
// 256 bytes is kept as it is.
func TestLongPathKeyIsBounded(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var apis []string
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) }))(ok)
	long := "/" + strings.Repeat("a", 64<<10)
	var codes []int
	for _, p := range []string{long + "1", long + "2", long + "1"} {
		codes = append(codes, serve(h, get(p, "192.0.2.1:1")).Code)
	}
	assert.Equal(t, []int{200, 200, 429}, codes, "distinct paths, distinct quotas; the same path, the same")
	require.Len(t, apis, 3)
	assert.NotEqual(t, apis[0], apis[1])
	assert.Equal(t, apis[0], apis[2])
	for _, api := range apis {
		assert.LessOrEqual(t, len(api), 400, "the key does not hold the path")
		assert.True(t, strings.HasPrefix(api, long[:256]), "it starts as the path does, for whoever reads it")
	}

	edge := "/" + strings.Repeat("b", 255)
	r := get("/", "192.0.2.1:1")
	r.URL.Path = edge
	api, found := httplimit.RoutePattern(nil)(r)
	assert.True(t, found)
	assert.Equal(t, edge, api, "a path of 256 bytes is kept")
}

// TestLongPathKeyCopiesNothing: the key of a megabyte path allocates its
// digest's few bytes, not a copy of the path, on every request that sends it.
func TestLongPathKeyCopiesNothing(t *testing.T) {
	r := get("/", "192.0.2.1:1")
	r.URL.Path = "/" + strings.Repeat("a", 1<<20)
	var api string
	allocated := limitertest.LeastAllocated(func() { api, _ = httplimit.RoutePattern(nil)(r) })
	assert.Less(t, allocated, uint64(4<<10), "bytes allocated by the key of a 1 MiB path")
	assert.Contains(t, api, " sha256:")
}

// TestHeadSharesTheQuotaOfGet: a ServeMux serves HEAD by the GET pattern, so
// a HEAD request counts against it (it runs the same handler) and is denied
// like GET, with the same fields, over a real connection that carries no
// body for HEAD.
func TestHeadSharesTheQuotaOfGet(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	require.NoError(t, svc.ConfigureAPI("GET /search", cfg(hotlimit.FixedWindow, 1, time.Minute)))
	mux := http.NewServeMux()
	mux.Handle("GET /search", ok)
	srv := httptest.NewServer(httplimit.New(svc, httplimit.WithUser(httplimit.Header("X-Key")))(mux))
	defer srv.Close()
	do := func(method string) *http.Response {
		req, err := http.NewRequest(method, srv.URL+"/search", nil)
		require.NoError(t, err)
		req.Header.Set("X-Key", "k")
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp
	}
	assert.Equal(t, http.StatusOK, do(http.MethodHead).StatusCode)
	resp := do(http.MethodGet)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the HEAD spent the GET route's quota")
	head := do(http.MethodHead)
	assert.Equal(t, http.StatusTooManyRequests, head.StatusCode)
	assert.Equal(t, resp.Header.Get("RateLimit-Policy"), head.Header.Get("RateLimit-Policy"))
	assert.NotEmpty(t, head.Header.Get("Retry-After"))
}

// TestEndedRequestGivesBackTheMemoryLimitsTake: a rule of two limits, one
// in memory (one request a minute) and one on a backend that cannot decide
// while the request's client leaves, and fails open. The memory limit counted
// the request before it ended; the request is then not served, so that
// count must be given back: the client's next request passes. Before, the
// memory limit kept it, and the next request was denied for a request never
// served.
func TestEndedRequestGivesBackTheMemoryLimitsTake(t *testing.T) {
	remote := &limitertest.CancelingRefunder{}
	memory, onBackend := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, order := range []service.Limits{{memory, onBackend}, {onBackend, memory}} {
		svc, err := service.NewFromRules(service.Rules{Default: order},
			limitertest.OnBackend(onBackend, remote, service.NewLimiter))
		require.NoError(t, err)
		var served int
		h := httplimit.New(svc)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))

		ctx, cancel := context.WithCancel(context.Background())
		remote.Cancel = cancel
		w := serve(h, get("/", "192.0.2.1:1").WithContext(ctx))
		require.Error(t, ctx.Err(), "%v: the request ended while the backend was asked", order)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, "%v", order)
		assert.Zero(t, served, "%v: an ended request is not served", order)

		remote.Cancel = nil
		assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "%v: the ended request took nothing", order)
		assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "192.0.2.1:1")).Code, "%v: the served one did", order)
		assert.Equal(t, 1, served, "%v", order)
	}
}

// TestExemptRequestIsInvisibleUnderDryRunAndObserver: the middleware passes
// an exempt request on as it is, under a dry run and an observer as well:
// it is served, carries no RateLimit or legacy fields, takes nothing from
// the quota and is not reported, even with the quota spent or its context
// ended. The requests that are not exempt are decided, advertised and
// reported as usual, the dry run serving their denials.
func TestExemptRequestIsInvisibleUnderDryRunAndObserver(t *testing.T) {
	for _, dry := range []bool{false, true} {
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
		var events []httplimit.Event
		var served int
		h := httplimit.New(svc, httplimit.WithExempt(httplimit.IsPreflight), httplimit.WithDryRun(dry), httplimit.WithLegacyHeaders(true),
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		for i, r := range []*http.Request{preflight("/x", "192.0.2.1:1"), preflight("/x", "192.0.2.1:1").WithContext(ended)} {
			w := serve(h, r)
			assert.Equal(t, http.StatusOK, w.Code, "dry run %v, exempt %d", dry, i)
			for _, k := range []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Limit", "Retry-After"} {
				assert.Empty(t, w.Header().Values(k), "dry run %v, exempt %d: %s", dry, i, k)
			}
		}
		assert.Empty(t, events, "dry run %v: exempt requests are not reported", dry)
		assert.Equal(t, 2, served, "dry run %v", dry)

		w := serve(h, get("/x", "192.0.2.1:1"))
		assert.Equal(t, http.StatusOK, w.Code, "dry run %v: the exempt requests took nothing", dry)
		assert.Equal(t, `"fixedwindow-1-1m";r=0;t=60`, w.Header().Get("RateLimit"), "dry run %v", dry)
		serve(h, preflight("/x", "192.0.2.1:1"))
		w = serve(h, get("/x", "192.0.2.1:1"))
		if dry {
			assert.Equal(t, http.StatusOK, w.Code, "a dry run serves a denial")
		} else {
			assert.Equal(t, http.StatusTooManyRequests, w.Code)
		}
		require.Len(t, events, 2, "dry run %v: the requests not exempt are reported", dry)
		assert.True(t, events[0].Decision.Allowed)
		assert.False(t, events[1].Decision.Allowed)
		assert.Equal(t, dry, events[1].DryRun)
		want := 4 // two exempt, the first GET, the last preflight
		if dry {
			want++ // and the denied GET
		}
		assert.Equal(t, want, served, "dry run %v", dry)
	}
}

// TestEndedRequestUnderFailClosedIsAnsweredAsEnded: a request whose client
// leaves while a limit on a backend that fails closed is asked, alone or
// beside a limit in memory. It is answered 503 as an ended request, and,
// as under a policy that fails open, carries no RateLimit fields or
// Retry-After: no limiter decided, and the failure policy's numbers (no
// quota left on the backend's limit) described nothing. Before, they were
// advertised. Nothing is counted: the client's next request passes the
// limit of one in memory. The observer sees the context's end once.
func TestEndedRequestUnderFailClosedIsAnsweredAsEnded(t *testing.T) {
	memory, onBackend := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{onBackend}, {memory, onBackend}, {onBackend, memory}} {
		remote := &limitertest.CancelingRefunder{Closed: true}
		svc, err := service.NewFromRules(service.Rules{Default: rule},
			limitertest.OnBackend(onBackend, remote, service.NewLimiter))
		require.NoError(t, err)
		var events []httplimit.Event
		var served int
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(true), httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(
			http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))

		ctx, cancel := context.WithCancel(context.Background())
		remote.Cancel = cancel
		w := serve(h, get("/", "192.0.2.1:1").WithContext(ctx))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, "%v", rule)
		assert.Contains(t, w.Body.String(), "ended before it was served", "%v", rule)
		for _, k := range []string{"RateLimit", "RateLimit-Policy", "X-RateLimit-Remaining", "Retry-After"} {
			assert.Empty(t, w.Header().Values(k), "%v: %s", rule, k)
		}
		assert.Zero(t, served, "%v", rule)
		require.Len(t, events, 1, "%v", rule)
		assert.ErrorIs(t, events[0].Err, context.Canceled, "%v", rule)
		assert.False(t, events[0].Decision.Allowed, "%v", rule)

		if len(rule) > 1 {
			remote.Cancel = nil
			assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "%v: the ended request took nothing", rule)
			assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "192.0.2.1:1")).Code, "%v: the served one did", rule)
		}
	}
}

// downRefunder is a limit on a backend that is down for its own reasons: it
// passes every request by its failure policy, counting nothing, with an
// error that is not the request's context's.
type downRefunder struct{ limitertest.CancelingRefunder }

var errDown = errors.New("backend down")

func (*downRefunder) TakeReceiptContext(_ context.Context, _ string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n < 1 {
		return hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, hotlimit.Receipt{}, nil
	}
	return hotlimit.Decision{Allowed: true, Limit: 5}, hotlimit.Receipt{}, errDown
}

// TestRequestEndedAfterItsDecisionIsServed: a rule of a memory limit and a
// limit whose backend is down (it passes, counting nothing, with an error
// of its own). The client leaves just after the service decided, while the
// request is still live for it: the service gives nothing back, the memory
// limit keeps the request. The middleware read the context again after
// the decision and answered 503 without serving it, so a request counted
// was never served, and the client's next one was denied for it. Now the
// middleware asks the decision's error, which wraps the context's only
// when the service gave the request back: the request is served.
func TestRequestEndedAfterItsDecisionIsServed(t *testing.T) {
	memory, down := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	var cancel atomic.Pointer[context.CancelFunc]
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, down}},
		// The observer runs after the service's decision, before the
		// middleware reads the outcome: the client leaves there.
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) {
			if c := cancel.Load(); c != nil {
				(*c)()
			}
		})),
		limitertest.OnBackend(down, &downRefunder{}, service.NewLimiter))
	require.NoError(t, err)
	served := 0
	h := httplimit.New(svc)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	ctx, c := context.WithCancel(context.Background())
	cancel.Store(&c)
	w := serve(h, get("/", "192.0.2.1:1").WithContext(ctx))
	cancel.Store(nil)
	require.Error(t, ctx.Err(), "the client left during the request")
	assert.Equal(t, http.StatusOK, w.Code, "the request the memory limit counted is served")
	assert.Equal(t, 1, served)
	assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "192.0.2.1:1")).Code, "the memory limit's one request is spent")
}

// cancelingDown is a downRefunder whose caller leaves while it is asked:
// it cancels the request's context, and still answers with its own error.
type cancelingDown struct{ cancel context.CancelFunc }

func (l *cancelingDown) Allow(string) bool { return true }
func (l *cancelingDown) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true, Limit: 5}
}
func (l *cancelingDown) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return l.Take(key, n), hotlimit.Receipt{}
}
func (l *cancelingDown) Refund(string, hotlimit.Receipt) {}
func (l *cancelingDown) TakeReceiptContext(_ context.Context, _ string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n < 1 {
		return hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, hotlimit.Receipt{}, nil
	}
	l.cancel()
	return hotlimit.Decision{Allowed: true, Limit: 5}, hotlimit.Receipt{}, errDown
}
func (l *cancelingDown) RefundContext(context.Context, string, hotlimit.Receipt) error { return nil }

// TestRequestEndedDuringABackendsOwnFailureIsNotServed: the client leaves
// while a limit whose backend is down for its own reasons is asked. The
// service gives back what the memory limit took, as the request has ended;
// its error says so, wrapping the context's, though the limit's own error
// does not: the middleware, which asks the error, answers without serving
// it, and the memory limit's request is there for the next one.
func TestRequestEndedDuringABackendsOwnFailureIsNotServed(t *testing.T) {
	memory, down := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, down}},
		limitertest.OnBackend(down, &cancelingDown{cancel: cancel}, service.NewLimiter))
	require.NoError(t, err)
	served := 0
	h := httplimit.New(svc)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	assert.Equal(t, http.StatusServiceUnavailable, serve(h, get("/", "192.0.2.1:1").WithContext(ctx)).Code)
	assert.Zero(t, served, "the ended request is not served")
	assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "the memory limit gave the ended request back")
	assert.Equal(t, 1, served)
}

// TestDryRunDecidesAndServesAnEndedRequest: under WithDryRun, a request
// whose context has already ended is decided and served as any other, as
// Event.Err's doc says: it takes its quota, carries the RateLimit fields,
// reaches the handler and is reported without an error. A dry run never
// changes what a client gets, so the client that left is served as it would
// be without the middleware.
func TestDryRunDecidesAndServesAnEndedRequest(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Minute), 0)
	var events []httplimit.Event
	var served int
	h := httplimit.New(svc, httplimit.WithDryRun(true),
		httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++; ok(w, r) }))
	ended, cancel := context.WithCancel(context.Background())
	cancel()

	w := serve(h, get("/", "192.0.2.1:1").WithContext(ended))
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, 1, served, "a dry run serves the ended request")
	assert.Equal(t, `"fixedwindow-2-1m";r=1;t=60`, w.Header().Get("RateLimit"), "and counts it")
	require.Len(t, events, 1)
	assert.True(t, events[0].DryRun)
	assert.True(t, events[0].Decision.Allowed)
	assert.NoError(t, events[0].Err, "a limiter decided it")

	w = serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, `"fixedwindow-2-1m";r=0;t=60`, w.Header().Get("RateLimit"), "the ended request took its quota")
}

// TestIsPreflightNeedsOptionsAndBothHeaders: only an OPTIONS request with
// an Origin and an Access-Control-Request-Method is a preflight. Any
// client can send those headers on a GET or a POST: matching it would make
// WithExempt(IsPreflight) an unlimited way into every route.
func TestIsPreflightNeedsOptionsAndBothHeaders(t *testing.T) {
	assert.True(t, httplimit.IsPreflight(preflight("/x", "192.0.2.1:1")))
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodHead} {
		r := preflight("/x", "192.0.2.1:1")
		r.Method = method
		assert.False(t, httplimit.IsPreflight(r), method)
	}
	for _, header := range []string{"Origin", "Access-Control-Request-Method"} {
		r := preflight("/x", "192.0.2.1:1")
		r.Header.Del(header)
		assert.False(t, httplimit.IsPreflight(r), "without %s", header)
	}
}

// timingOutRefunder is a limit on a backend slower than its limiter's own
// timeout: it passes every request by its failure policy, counting nothing,
// with an error that wraps context.DeadlineExceeded, its own deadline's,
// not the request's.
type timingOutRefunder struct{ limitertest.CancelingRefunder }

func (*timingOutRefunder) TakeReceiptContext(_ context.Context, _ string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if n < 1 {
		return hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, hotlimit.Receipt{}, nil
	}
	return hotlimit.Decision{Allowed: true, Limit: 5}, hotlimit.Receipt{}, limitertest.ErrOwnTimeout
}

// TestRequestEndedAfterADecisionBesideALimitersOwnTimeoutIsServed: as
// TestRequestEndedAfterItsDecisionIsServed, with the failing limit's error
// its own timeout, which wraps context.DeadlineExceeded. The client leaves
// just after the service decided, while the request was live for it: the
// memory limit keeps the request, so the request is served, and its Event
// is not Ended. Read as the request's end, the limiter's own deadline made
// the middleware answer 503 without serving a request the memory limit had
// counted.
func TestRequestEndedAfterADecisionBesideALimitersOwnTimeoutIsServed(t *testing.T) {
	memory, slow := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	var cancel atomic.Pointer[context.CancelFunc]
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, slow}},
		// The observer runs after the service's decision, before the
		// middleware reads the outcome: the client leaves there.
		hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) {
			if c := cancel.Load(); c != nil {
				(*c)()
			}
		})),
		limitertest.OnBackend(slow, &timingOutRefunder{}, service.NewLimiter))
	require.NoError(t, err)
	served := 0
	var events []httplimit.Event
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	ctx, c := context.WithCancel(context.Background())
	cancel.Store(&c)
	w := serve(h, get("/", "192.0.2.1:1").WithContext(ctx))
	cancel.Store(nil)
	require.Error(t, ctx.Err(), "the client left during the request")
	require.Len(t, events, 1)
	assert.ErrorIs(t, events[0].Err, limitertest.ErrOwnTimeout, "the failing limit's error")
	assert.False(t, events[0].Ended, "the request ended after its decision")
	assert.Equal(t, http.StatusOK, w.Code, "the request the memory limit counted is served")
	assert.Equal(t, 1, served)
	assert.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "192.0.2.1:1")).Code, "the memory limit's one request is spent")
}
