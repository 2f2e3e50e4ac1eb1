package httplimit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

func cfg(a hotlimit.Algorithm, limit int, window time.Duration) hotlimit.Config {
	return hotlimit.Config{Algorithm: a, Limit: limit, Window: window}
}

// newService returns a service with default policy def on a fake clock that
// starts at start.
func newService(t testing.TB, def hotlimit.Config, start time.Duration) (*service.Service, *atomic.Int64) {
	t.Helper()
	var now atomic.Int64
	now.Store(int64(start))
	svc, err := service.New(def, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	return svc, &now
}

// ok is the handler behind the middleware in most tests: 200 "ok".
// keyedBy returns the middleware over ok that keys requests by user, on a
// service of one request a minute for each user and, when rule is not
// empty, quota a minute for the user rule names, and the users its observer
// heard of, in order.
func keyedBy(t *testing.T, user httplimit.KeyFunc, rule string, quota int) (http.Handler, *[]string) {
	t.Helper()
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	if rule != "" {
		require.NoError(t, svc.ConfigureUser(rule, cfg(hotlimit.FixedWindow, quota, time.Minute)))
	}
	users := new([]string)
	return httplimit.New(svc, httplimit.WithUser(user),
		httplimit.WithObserver(func(e httplimit.Event) { *users = append(*users, e.User) }))(ok), users
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
})

func get(target, remote string, header ...string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, target, nil)
	r.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHeaderKeysAreCanonical(t *testing.T) {
	// The middleware writes header map keys directly; they must be the
	// canonical forms that Header.Get looks up.
	for _, k := range []string{"RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(ok)
		serve(h, get("/", "192.0.2.1:1"))
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Len(t, w.Header().Values(k), 1, k)
		assert.Contains(t, w.Header(), textproto.CanonicalMIMEHeaderKey(k), k)
	}
}

// step is one request of a script and what its response must carry.
type step struct {
	at         time.Duration // fake clock
	status     int
	rateLimit  string // RateLimit field
	retryAfter string // "" when absent
}

func runSteps(t *testing.T, c hotlimit.Config, policy string, steps []step) {
	t.Helper()
	svc, now := newService(t, c, 0)
	var calls int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; ok(w, r) })
	h := httplimit.New(svc)(next)
	for i, s := range steps {
		now.Store(int64(s.at))
		before := calls
		w := serve(h, get("/x", "192.0.2.1:1234"))
		assert.Equal(t, s.status, w.Code, "step %d", i)
		assert.Equal(t, []string{policy}, w.Header().Values("RateLimit-Policy"), "step %d", i)
		assert.Equal(t, []string{s.rateLimit}, w.Header().Values("RateLimit"), "step %d", i)
		assert.Equal(t, s.retryAfter, w.Header().Get("Retry-After"), "step %d", i)
		assert.Empty(t, w.Header().Get("X-RateLimit-Limit"), "step %d: legacy headers are off by default", i)
		if s.status == http.StatusOK {
			assert.Equal(t, before+1, calls, "step %d: the handler runs", i)
			assert.Equal(t, "ok", w.Body.String(), "step %d", i)
		} else {
			assert.Equal(t, before, calls, "step %d: a denied request never reaches the handler", i)
		}
	}
}

func TestHeadersFixedWindow(t *testing.T) {
	const p = `"fixedwindow-3-1s";q=3;w=1`
	s := time.Second
	runSteps(t, cfg(hotlimit.FixedWindow, 3, s), p, []step{
		{10*s + 250*time.Millisecond, 200, `"fixedwindow-3-1s";r=2;t=1`, ""}, // 750 ms left: t rounds up
		{10*s + 250*time.Millisecond, 200, `"fixedwindow-3-1s";r=1;t=1`, ""},
		{10*s + 999*time.Millisecond, 200, `"fixedwindow-3-1s";r=0;t=1`, ""},
		{10*s + 999*time.Millisecond, 429, `"fixedwindow-3-1s";r=0;t=1`, "1"}, // 1 ms left: still a whole second
		{11 * s, 200, `"fixedwindow-3-1s";r=2;t=1`, ""},                       // a new window
	})
	runSteps(t, cfg(hotlimit.FixedWindow, 2, 10*s), `"fixedwindow-2-10s";q=2;w=10`, []step{
		{2500 * time.Millisecond, 200, `"fixedwindow-2-10s";r=1;t=8`, ""}, // 7.5 s left
		{3 * s, 200, `"fixedwindow-2-10s";r=0;t=7`, ""},                   // exactly 7 s left
		{3 * s, 429, `"fixedwindow-2-10s";r=0;t=7`, "7"},
		{3*s + 1, 429, `"fixedwindow-2-10s";r=0;t=7`, "7"},
		{10 * s, 200, `"fixedwindow-2-10s";r=1;t=10`, ""},
	})
}

func TestHeadersTokenBucket(t *testing.T) {
	const p = `"tokenbucket-5-1s";q=5;w=1`
	s := time.Second
	ms := time.Millisecond
	runSteps(t, cfg(hotlimit.TokenBucket, 5, s), p, []step{
		{s, 200, `"tokenbucket-5-1s";r=4;t=1`, ""}, // 200 ms to full
		{s, 200, `"tokenbucket-5-1s";r=3;t=1`, ""},
		{s, 200, `"tokenbucket-5-1s";r=2;t=1`, ""},
		{s, 200, `"tokenbucket-5-1s";r=1;t=1`, ""},
		{s, 200, `"tokenbucket-5-1s";r=0;t=1`, ""},
		{s, 429, `"tokenbucket-5-1s";r=0;t=1`, "1"}, // 200 ms to a token
		{s + 200*ms, 200, `"tokenbucket-5-1s";r=0;t=1`, ""},
		{s + 400*ms, 200, `"tokenbucket-5-1s";r=0;t=1`, ""},
		{3 * s, 200, `"tokenbucket-5-1s";r=4;t=1`, ""},
	})
}

func TestRetryAfterIsNeverEarlier(t *testing.T) {
	// For every clock offset in a window, Retry-After is RetryAfter rounded up
	// to whole seconds: never earlier, less than a second later.
	for _, window := range []time.Duration{time.Second, 1500 * time.Millisecond, 7 * time.Second} {
		svc, now := newService(t, cfg(hotlimit.FixedWindow, 1, window), 0)
		var last hotlimit.Decision
		h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { last = e.Decision }))(ok)
		for i := range 200 {
			// 200 offsets spread over about 16 windows, each at a different
			// point of its window.
			now.Store(int64(i) * (int64(window)/13 + 7919))
			serve(h, get("/", "192.0.2.1:1"))
			w := serve(h, get("/", "192.0.2.1:1"))
			require.Equal(t, http.StatusTooManyRequests, w.Code, "step %d", i)
			secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
			require.NoError(t, err, "step %d", i)
			require.Positive(t, last.RetryAfter, "step %d", i)
			got := time.Duration(secs) * time.Second
			assert.GreaterOrEqual(t, got, last.RetryAfter, "step %d", i)
			assert.Less(t, got, last.RetryAfter+time.Second, "step %d", i)
		}
	}
}

func TestDeniedIsProblemJSON(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.SlidingLog, 1, time.Minute), 0)
	h := httplimit.New(svc)(ok)
	require.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code)
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
	assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
	assert.Equal(t, "60", w.Header().Get("Retry-After"))
	assert.Equal(t, `"slidinglog-1-1m";q=1;w=60`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"slidinglog-1-1m";r=0;t=60`, w.Header().Get("RateLimit"))
	assert.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))

	var p map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	assert.Equal(t, map[string]any{
		"type":   "about:blank",
		"title":  "Too Many Requests",
		"status": float64(429),
		"detail": `Rate limit of policy "slidinglog-1-1m" (1 request per 1m) exceeded; retry in 60 s.`,
	}, p)
}

func TestLegacyHeaders(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 2, time.Minute), 30*time.Second)
	h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(ok)
	for i, want := range []struct {
		status                  int
		limit, remaining, reset string
	}{
		{200, "2", "1", "30"},
		{200, "2", "0", "30"},
		{429, "2", "0", "30"},
	} {
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, want.status, w.Code, "step %d", i)
		assert.Equal(t, want.limit, w.Header().Get("X-RateLimit-Limit"), "step %d", i)
		assert.Equal(t, want.remaining, w.Header().Get("X-RateLimit-Remaining"), "step %d", i)
		assert.Equal(t, want.reset, w.Header().Get("X-RateLimit-Reset"), "step %d", i)
		assert.Equal(t, `"fixedwindow-2-1m";r=`+want.remaining+`;t=`+want.reset, w.Header().Get("RateLimit"), "step %d", i)
	}
	now.Add(int64(45 * time.Second))
	w := serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	assert.Equal(t, "45", w.Header().Get("X-RateLimit-Reset"))
}

func TestDryRunOnlySetsHeadersAndCounts(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var events []httplimit.Event
	var calls int
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; ok(w, r) })
	h := httplimit.New(svc,
		httplimit.WithDryRun(true),
		httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }),
	)(next)
	for i, want := range []string{"r=1", "r=0", "r=0", "r=0"} {
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusOK, w.Code, "step %d", i)
		assert.Equal(t, `"fixedwindow-2-1s";`+want+`;t=1`, w.Header().Get("RateLimit"), "step %d", i)
		assert.Empty(t, w.Header().Get("Retry-After"), "step %d", i)
	}
	assert.Equal(t, 4, calls)
	require.Len(t, events, 4)
	for i, e := range events {
		assert.True(t, e.DryRun, "event %d", i)
		assert.Equal(t, i < 2, e.Decision.Allowed, "event %d: the limiter still counts", i)
	}
}

func TestDenyHandler(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	h := httplimit.New(svc, httplimit.WithDenyHandler(func(w http.ResponseWriter, r *http.Request, e httplimit.Event) {
		assert.Equal(t, "1", w.Header().Get("Retry-After"), "set before the deny handler runs")
		assert.NotEmpty(t, w.Header().Get("RateLimit"))
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte("slow down " + e.User))
	}))(ok)
	serve(h, get("/", "192.0.2.1:1"))
	w := serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "slow down ip:192.0.2.1", w.Body.String())
}

func TestObserverSeesEveryDecision(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 3, time.Second), 0)
	search := cfg(hotlimit.TokenBucket, 1, time.Second)
	require.NoError(t, svc.ConfigureAPI("GET /search", search))
	mux := http.NewServeMux()
	mux.Handle("GET /search", ok)
	mux.Handle("/", ok)

	var mu sync.Mutex
	counts := map[string]int{} // policy/allowed -> count, as a metrics counter would
	var last httplimit.Event
	h := httplimit.New(svc,
		httplimit.WithUser(httplimit.Header("X-API-Key")),
		httplimit.WithObserver(func(e httplimit.Event) {
			mu.Lock()
			defer mu.Unlock()
			counts[e.Policy+"/"+strconv.FormatBool(e.Decision.Allowed)]++
			last = e
		}),
	)(mux)
	for range 3 {
		serve(h, get("/search?q=1", "192.0.2.1:1", "X-API-Key", "alice"))
	}
	assert.Equal(t, "header:x-api-key:alice", last.User)
	assert.Equal(t, "GET /search", last.API)
	assert.Equal(t, search, last.Config)
	assert.Equal(t, "tokenbucket-1-1s", last.Policy)
	assert.Equal(t, "/search", last.Request.URL.Path)
	assert.False(t, last.DryRun)
	for range 4 {
		serve(h, get("/elsewhere", "192.0.2.1:1", "X-API-Key", "alice"))
	}
	assert.Equal(t, "/", last.API)
	assert.Equal(t, map[string]int{
		"tokenbucket-1-1s/true": 1, "tokenbucket-1-1s/false": 2,
		"fixedwindow-3-1s/true": 3, "fixedwindow-3-1s/false": 1,
	}, counts)
}

func TestPolicyNames(t *testing.T) {
	for i, tc := range []struct {
		c      hotlimit.Config
		name   string
		policy string
	}{
		{cfg(hotlimit.FixedWindow, 3, time.Second), "fixedwindow-3-1s", `"fixedwindow-3-1s";q=3;w=1`},
		{cfg(hotlimit.TokenBucket, 100, time.Minute), "tokenbucket-100-1m", `"tokenbucket-100-1m";q=100;w=60`},
		{cfg(hotlimit.SlidingLog, 5, 90*time.Minute), "slidinglog-5-1h30m", `"slidinglog-5-1h30m";q=5;w=5400`},
		{cfg(hotlimit.SlidingLog, 5, 2*time.Hour), "slidinglog-5-2h", `"slidinglog-5-2h";q=5;w=7200`},
		{cfg(hotlimit.TokenBucket, 2, 500*time.Millisecond), "tokenbucket-2-500ms", `"tokenbucket-2-500ms";q=2;w=1`}, // w at least 1
		{cfg(hotlimit.FixedWindow, 7, 1500*time.Millisecond), "fixedwindow-7-1.5s", `"fixedwindow-7-1.5s";q=7;w=2`},  // w rounded up
	} {
		assert.Equal(t, tc.name, httplimit.PolicyName(tc.c), "case %d", i)
		svc, _ := newService(t, tc.c, 0)
		w := serve(httplimit.New(svc)(ok), get("/", "192.0.2.1:1"))
		assert.Equal(t, tc.policy, w.Header().Get("RateLimit-Policy"), "case %d", i)
	}
}

func TestWithPolicyName(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 3, time.Second), 0)
	require.NoError(t, svc.ConfigureUser(httplimit.HeaderKey("X-API-Key", "premium"), cfg(hotlimit.TokenBucket, 10, time.Second)))
	require.NoError(t, svc.ConfigureUser(httplimit.HeaderKey("X-API-Key", "odd"), cfg(hotlimit.TokenBucket, 11, time.Second)))
	require.NoError(t, svc.ConfigureUser(httplimit.HeaderKey("X-API-Key", "empty"), cfg(hotlimit.TokenBucket, 12, time.Second)))
	names := map[int]string{3: "free", 10: "premium", 11: "a \"quoted\" \\ näme\n\x7f"}
	var calls atomic.Int32
	h := httplimit.New(svc,
		httplimit.WithUser(httplimit.Header("X-API-Key")),
		httplimit.WithPolicyName(func(c hotlimit.Config) string { calls.Add(1); return names[c.Limit] }),
	)(ok)
	for i, tc := range []struct{ user, policy, rateLimit string }{
		{"alice", `"free";q=3;w=1`, `"free";r=2;t=1`},
		{"premium", `"premium";q=10;w=1`, `"premium";r=9;t=1`},
		{"odd", `"a \"quoted\" \\ n_me__";q=11;w=1`, `"a \"quoted\" \\ n_me__";r=10;t=1`}, // DEL is no printable ASCII either
		{"empty", `"tokenbucket-12-1s";q=12;w=1`, `"tokenbucket-12-1s";r=11;t=1`},         // empty name: the default
		{"bob", `"free";q=3;w=1`, `"free";r=2;t=1`},
	} {
		w := serve(h, get("/", "192.0.2.1:1", "X-API-Key", tc.user))
		assert.Equal(t, tc.policy, w.Header().Get("RateLimit-Policy"), "step %d", i)
		assert.Equal(t, tc.rateLimit, w.Header().Get("RateLimit"), "step %d", i)
	}
	assert.EqualValues(t, 4, calls.Load(), "names are computed once per Config")
}

func TestNestedLimitersAppendTheirItems(t *testing.T) {
	svc1, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	svc2, _ := newService(t, cfg(hotlimit.TokenBucket, 5, time.Second), 0)
	h := httplimit.New(svc1, httplimit.WithLegacyHeaders(true))(httplimit.New(svc2, httplimit.WithLegacyHeaders(true))(ok))
	w := serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, []string{`"fixedwindow-100-1m";q=100;w=60`, `"tokenbucket-5-1s";q=5;w=1`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"fixedwindow-100-1m";r=99;t=60`, `"tokenbucket-5-1s";r=4;t=1`}, w.Header().Values("RateLimit"))
	assert.Equal(t, []string{"5"}, w.Header().Values("X-RateLimit-Limit"), "legacy fields are single values: the inner one wins")
}

func TestHandlerAppendingToAFieldTouchesNoOther(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 3, time.Second), 0)
	h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("RateLimit-Policy", `"other";q=1`)
		w.Header().Add("X-RateLimit-Limit", "9")
	}))
	w := serve(h, get("/", "192.0.2.1:1"))
	assert.Equal(t, []string{`"fixedwindow-3-1s";q=3;w=1`, `"other";q=1`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"fixedwindow-3-1s";r=2;t=1`}, w.Header().Values("RateLimit"))
	assert.Equal(t, []string{"3", "9"}, w.Header().Values("X-RateLimit-Limit"))
	assert.Equal(t, []string{"2"}, w.Header().Values("X-RateLimit-Remaining"))
}

func TestAPIKey(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	var apis []string
	observe := httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) })
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", ok)
	mux.Handle("POST /items", ok)

	// Around the mux: the pattern the mux will route to; the path when none.
	h := httplimit.New(svc, observe)(mux)
	serve(h, get("/items/42", "192.0.2.1:1"))
	serve(h, httptest.NewRequest(http.MethodPost, "/items", nil))
	serve(h, get("/nowhere", "192.0.2.1:1"))
	assert.Equal(t, []string{"GET /items/{id}", "POST /items", "/nowhere"}, apis)

	// Inside the mux: r.Pattern.
	apis = nil
	inner := http.NewServeMux()
	limit := httplimit.New(svc, observe)
	inner.Handle("GET /users/{name}", limit(ok))
	serve(inner, get("/users/ann", "192.0.2.1:1"))
	assert.Equal(t, []string{"GET /users/{name}"}, apis)

	// Around a plain handler: the path. WithAPI overrides.
	apis = nil
	serve(httplimit.New(svc, observe)(ok), get("/a/b", "192.0.2.1:1"))
	serve(httplimit.New(svc, observe, httplimit.WithAPI(httplimit.Header("X-API")))(ok), get("/a/b", "192.0.2.1:1", "X-API", "reports"))
	serve(httplimit.New(svc, observe, httplimit.WithAPI(httplimit.RoutePattern(mux)))(ok), get("/items/7", "192.0.2.1:1"))
	assert.Equal(t, []string{"/a/b", "header:x-api:reports", "GET /items/{id}"}, apis)
}

type ctxKey struct{}

type principal struct{ id string }

func (p principal) String() string { return p.id }

func TestUserKeys(t *testing.T) {
	withCtx := func(r *http.Request, v any) *http.Request {
		return r.WithContext(context.WithValue(r.Context(), ctxKey{}, v))
	}
	chain := httplimit.FirstOf(nil, httplimit.ContextValue(ctxKey{}), httplimit.Header("x-api-key"), httplimit.ClientIP())
	for i, tc := range []struct {
		r    *http.Request
		key  string
		ok   bool
		from httplimit.KeyFunc
	}{
		{get("/", "192.0.2.1:1", "X-Api-Key", "k1"), "header:x-api-key:k1", true, httplimit.Header("X-API-Key")},
		{get("/", "192.0.2.1:1", "X-Api-Key", "k1", "X-Api-Key", "k2"), "header:x-api-key:k1", true, httplimit.Header("X-API-Key")},
		{get("/", "192.0.2.1:1", "X-Api-Key", ""), "", false, httplimit.Header("X-API-Key")},
		{get("/", "192.0.2.1:1"), "", false, httplimit.Header("X-API-Key")},
		{withCtx(get("/", "192.0.2.1:1"), "u-7"), "context:httplimit_test.ctxKey:u-7", true, httplimit.ContextValue(ctxKey{})},
		{withCtx(get("/", "192.0.2.1:1"), principal{"p-9"}), "context:httplimit_test.ctxKey:p-9", true, httplimit.ContextValue(ctxKey{})},
		{withCtx(get("/", "192.0.2.1:1"), 42), "", false, httplimit.ContextValue(ctxKey{})},
		{withCtx(get("/", "192.0.2.1:1"), ""), "", false, httplimit.ContextValue(ctxKey{})},
		{get("/", "192.0.2.1:1"), "", false, httplimit.ContextValue(ctxKey{})},
		{withCtx(get("/", "192.0.2.1:1", "X-Api-Key", "k1"), "u-7"), "context:httplimit_test.ctxKey:u-7", true, chain},
		{get("/", "192.0.2.1:1", "X-Api-Key", "k1"), "header:x-api-key:k1", true, chain},
		{get("/", "192.0.2.1:1"), "ip:192.0.2.1", true, chain},
		{get("/", ""), "", false, chain},
		{get("/", ""), "", false, httplimit.FirstOf()},
	} {
		key, ok := tc.from(tc.r)
		assert.Equal(t, tc.key, key, "case %d", i)
		assert.Equal(t, tc.ok, ok, "case %d", i)
	}
}

func TestKeylessRequestsShareOneQuota(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var users []string
	h := httplimit.New(svc,
		httplimit.WithUser(httplimit.Header("X-API-Key")),
		httplimit.WithObserver(func(e httplimit.Event) { users = append(users, e.User) }),
	)(ok)
	codes := []int{}
	for _, remote := range []string{"192.0.2.1:1", "192.0.2.2:1", "192.0.2.3:1"} {
		codes = append(codes, serve(h, get("/", remote)).Code)
	}
	assert.Equal(t, []int{200, 200, 429}, codes)
	assert.Equal(t, []string{"", "", ""}, users)
}

// TestAPIKeyFuncThatFindsNoneIsTheEmptyAPI: as for the user, an API key
// function that finds no key (ok false) but returns text anyway was limited
// under that text, though KeyFunc says the key is then ignored: such a
// request is now limited under the empty API.
func TestAPIKeyFuncThatFindsNoneIsTheEmptyAPI(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureAPI("", cfg(hotlimit.FixedWindow, 1, time.Second)))
	operation := func(r *http.Request) (string, bool) {
		v := r.Header.Get("X-Operation")
		return "op/" + v, v != ""
	}
	var apis []string
	h := httplimit.New(svc,
		httplimit.WithAPI(operation),
		httplimit.WithObserver(func(e httplimit.Event) { apis = append(apis, e.API) }),
	)(ok)
	codes := []int{}
	for _, r := range []*http.Request{get("/", "192.0.2.1:1"), get("/", "192.0.2.1:1"), get("/", "192.0.2.1:1", "X-Operation", "report")} {
		codes = append(codes, serve(h, r).Code)
	}
	assert.Equal(t, []int{200, 429, 200}, codes, "the requests without an API spend the empty API's quota of 1")
	assert.Equal(t, []string{"", "", "op/report"}, apis)
}

// TestUserKeyFuncThatFindsNoneIsTheEmptyUser: a key function of one's own
// that finds no key (ok false) but returns text anyway, here a prefix it
// puts before the tenant header's value, was limited under that text. The
// package doc says a request for which no key is found is limited as the
// empty user, as FirstOf ignores such text: the key is now "", and the
// rule of the empty user applies.
func TestUserKeyFuncThatFindsNoneIsTheEmptyUser(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	require.NoError(t, svc.ConfigureUser("", cfg(hotlimit.FixedWindow, 1, time.Second)))
	tenant := func(r *http.Request) (string, bool) {
		v := r.Header.Get("X-Tenant")
		return "tenant/" + v, v != ""
	}
	var users []string
	h := httplimit.New(svc,
		httplimit.WithUser(tenant),
		httplimit.WithObserver(func(e httplimit.Event) { users = append(users, e.User) }),
	)(ok)
	codes := []int{}
	for _, r := range []*http.Request{get("/", "192.0.2.1:1"), get("/", "192.0.2.2:1"), get("/", "192.0.2.3:1", "X-Tenant", "acme")} {
		codes = append(codes, serve(h, r).Code)
	}
	assert.Equal(t, []int{200, 429, 200}, codes, "the keyless requests share the empty user's quota of 1")
	assert.Equal(t, []string{"", "", "tenant/acme"}, users)
}

func TestNilServiceFailsClosed(t *testing.T) {
	assert.NotPanics(t, func() {
		w := serve(httplimit.New(nil)(ok), get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusInternalServerError, w.Code)
	})
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	assert.NotPanics(t, func() {
		h := httplimit.New(svc, nil, httplimit.WithUser(nil), httplimit.WithAPI(nil), httplimit.WithDenyHandler(nil), httplimit.WithPolicyName(nil))(nil)
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusNotFound, w.Code, "a nil handler is http.NotFoundHandler")
		assert.Equal(t, `"fixedwindow-2-1s";r=1;t=1`, w.Header().Get("RateLimit"))
	})
}

// TestZeroServiceFailsClosed: a zero service.Service, which service.New did
// not build, panicked at every request (its rules are a nil pointer), so
// that net/http dropped the connection, where grpclimit answered INTERNAL.
// It is now the configuration error a nil service is: every request is
// answered 500, and none reaches the handler.
func TestZeroServiceFailsClosed(t *testing.T) {
	reached := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	var w *httptest.ResponseRecorder
	require.NotPanics(t, func() { w = serve(httplimit.New(&service.Service{})(next), get("/", "192.0.2.1:1")) })
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "rate limiter not configured\n", w.Body.String())
	assert.False(t, reached, "no request goes through unlimited")
}

// TestZeroServiceGivenRulesFailsClosed: a zero service.Service that was
// offered rules (Replace refuses them) passed for built, and served
// requests under them when Replace took them. It is a missing service too.
func TestZeroServiceGivenRulesFailsClosed(t *testing.T) {
	var svc service.Service
	require.Error(t, svc.Replace(service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute}}}))
	reached := false
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true })
	w := serve(httplimit.New(&svc)(next), get("/", "192.0.2.1:1"))
	assert.Equal(t, http.StatusInternalServerError, w.Code)
	assert.Equal(t, "rate limiter not configured\n", w.Body.String())
	assert.False(t, reached, "no request goes through")
}

// TestNilHandlerValueIsNotFound: a handler of a nil value (a nil
// http.HandlerFunc, a *http.ServeMux never built) is a nil handler, as the
// doc of New says, answered by http.NotFoundHandler instead of a panic at the
// first request allowed.
func TestNilHandlerValueIsNotFound(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var f http.HandlerFunc
	var mux *http.ServeMux
	for _, next := range []http.Handler{f, mux} {
		assert.NotPanics(t, func() {
			w := serve(httplimit.New(svc)(next), get("/", "192.0.2.1:1"))
			assert.Equal(t, http.StatusNotFound, w.Code, "%T", next)
		}, "%T", next)
	}
}

func TestSpoofedHeaderDoesNotChangeTheBucket(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	h := httplimit.New(svc, httplimit.WithUser(httplimit.ClientIP(httplimit.TrustProxies(mustPrefix(t, "10.0.0.0/8")))))(ok)
	var codes []int
	for _, spoof := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		r := get("/", "203.0.113.9:5555", "X-Forwarded-For", spoof, "Forwarded", "for="+spoof)
		codes = append(codes, serve(h, r).Code)
	}
	assert.Equal(t, []int{200, 200, 429}, codes, "an untrusted peer is one client whatever it sends")

	// Through a trusted proxy, each forwarded client has its own quota, and
	// what a client prepends is ignored.
	codes = nil
	for _, client := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.2", "198.51.100.2"} {
		r := get("/", "10.1.2.3:80", "X-Forwarded-For", "6.6.6.6, "+client)
		codes = append(codes, serve(h, r).Code)
	}
	assert.Equal(t, []int{200, 200, 200, 429}, codes)
}

// writer is a minimal ResponseWriter that keeps its header map between
// requests, so that allocation counts show only what the middleware adds.
type writer struct{ h http.Header }

func (w *writer) Header() http.Header         { return w.h }
func (w *writer) Write(b []byte) (int, error) { return len(b), nil }
func (w *writer) WriteHeader(int)             {}

var trivial = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
})

var body = []byte("ok")

// steadyAllocs returns the allocations of one request to h from a client
// h has seen before (its first request creates the key's state), and the
// writer holding the last response's headers.
func steadyAllocs(h http.Handler) (float64, *writer) {
	w := &writer{h: http.Header{}}
	r := get("/x", "192.0.2.1:1")
	h.ServeHTTP(w, r)
	allocs := testing.AllocsPerRun(100, func() {
		clear(w.h)
		h.ServeHTTP(w, r)
	})
	return allocs, w
}

func TestAllowedPathAllocatesOnlyItsHeaders(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1<<20, time.Second), 0)
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(legacy))(trivial)
		allocs, w := steadyAllocs(h)
		assert.Equal(t, 2.0, allocs, "legacy=%v: the header text and the value slice", legacy)
		assert.Equal(t, `"fixedwindow-1048576-1s";r=1048474;t=1`, w.h.Get("RateLimit"))
	}
}

func TestDenyProblemWhenWaitingCannotHelp(t *testing.T) {
	w := httptest.NewRecorder()
	httplimit.DenyProblem(w, get("/", "192.0.2.1:1"), httplimit.Event{
		Config:   cfg(hotlimit.TokenBucket, 1, time.Second),
		Policy:   "p",
		Decision: hotlimit.Decision{Limit: 1, RetryAfter: hotlimit.Never},
	})
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	var p map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	assert.Equal(t, `Rate limit of policy "p" (1 request per 1s) exceeded; this request can never pass under it.`, p["detail"])
}

// TestDeniedNamesTheLimitThatDenied: under "100/s and 3/min", the 429 of the
// fourth request names the 3/min limit in its body and in RateLimit-Policy.
func TestDeniedNamesTheLimitThatDenied(t *testing.T) {
	var now atomic.Int64
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		cfg(hotlimit.TokenBucket, 100, time.Second), cfg(hotlimit.FixedWindow, 3, time.Minute),
	}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	for i := range 3 {
		w := serve(h, get("/", "192.0.2.1:1"))
		require.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		assert.Equal(t, `"fixedwindow-3-1m";q=3;w=60`, w.Header().Get("RateLimit-Policy"), "request %d", i+1)
	}
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, `"fixedwindow-3-1m";q=3;w=60`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, `"fixedwindow-3-1m";r=0;t=60`, w.Header().Get("RateLimit"))
	assert.Contains(t, w.Body.String(), `policy \"fixedwindow-3-1m\" (3 requests per 1m) exceeded; retry in 60 s`)
}

// An allow-listed caller (an Unlimited rule) has no quota: the RateLimit
// fields would read q=0 next to r=9223372036854775807, which tells a client
// its quota is empty. No field is set; the observer still sees the decision.
func TestUnlimitedRuleSetsNoRateLimitFields(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	require.NoError(t, svc.ConfigureUser("ip:192.0.2.7", hotlimit.Config{Algorithm: hotlimit.Unlimited}))
	var seen atomic.Int64
	h := httplimit.New(svc, httplimit.WithLegacyHeaders(true),
		httplimit.WithObserver(func(e httplimit.Event) { seen.Add(1) }))(ok)
	for i := range 3 {
		w := serve(h, get("/", "192.0.2.7:1"))
		assert.Equal(t, http.StatusOK, w.Code, "request %d", i+1)
		for _, k := range []string{"RateLimit-Policy", "RateLimit", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			assert.Empty(t, w.Header().Values(k), "request %d: %s", i+1, k)
		}
	}
	assert.EqualValues(t, 3, seen.Load())
	w := serve(h, get("/", "192.0.2.8:1"))
	assert.Equal(t, `"fixedwindow-1-1s";q=1;w=1`, w.Header().Get("RateLimit-Policy"), "other callers keep theirs")
}

// TestBurstRemainingNeverExceedsQuota: a token bucket of 5 per second with a
// burst of 20 passes 20 at once. Its RateLimit-Policy must say so, q=20 over
// the 4 s the rate takes to grant them, so that r (up to 19) never exceeds
// q, and its name must differ from the burst-less policy of the same limit
// and window, which passes only 5 at once.
func TestBurstRemainingNeverExceedsQuota(t *testing.T) {
	burst := cfg(hotlimit.TokenBucket, 5, time.Second)
	burst.Burst = 20
	svc, _ := newService(t, burst, 0)
	require.NoError(t, svc.ConfigureAPI("/plain", cfg(hotlimit.TokenBucket, 5, time.Second)))
	h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(ok)

	passed := 0
	for i := range 25 {
		w := serve(h, get("/", "192.0.2.1:1"))
		if w.Code != http.StatusOK {
			break
		}
		passed++
		assert.Equal(t, `"tokenbucket-5-1s-burst20";q=20;w=4`, w.Header().Get("RateLimit-Policy"), "request %d", i)
		assert.Equal(t, `"tokenbucket-5-1s-burst20";r=`+strconv.Itoa(19-i)+`;t=`+strconv.Itoa(int(transportCeil(time.Duration(i+1)*200*time.Millisecond))), w.Header().Get("RateLimit"), "request %d", i)
		assert.Equal(t, "20", w.Header().Get("X-RateLimit-Limit"), "request %d", i)
		r, err := strconv.Atoi(w.Header().Get("X-RateLimit-Remaining"))
		require.NoError(t, err)
		assert.LessOrEqual(t, r, 20, "request %d: remaining within the quota", i)
	}
	assert.Equal(t, 20, passed, "a burst of q passes from a full quota")

	w := serve(h, get("/plain", "192.0.2.1:1"))
	assert.Equal(t, `"tokenbucket-5-1s";q=5;w=1`, w.Header().Get("RateLimit-Policy"))
}

// transportCeil is d in whole seconds, rounded up.
func transportCeil(d time.Duration) int64 {
	return int64((d + time.Second - 1) / time.Second)
}

// neverLimiter denies every request with a RetryAfter of hotlimit.Never, as
// a limiter does for a request no wait lets pass.
type neverLimiter struct{}

func (neverLimiter) Allow(string) bool { return false }
func (neverLimiter) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Limit: 3, RetryAfter: hotlimit.Never, ResetAfter: time.Second}
}

// TestDenialThatNoWaitHelpsHasNoRetryAfter: a denial whose RetryAfter is
// hotlimit.Never is a 429 without Retry-After (no number of seconds would
// be true), whose body says the request can never pass, with the RateLimit
// fields of the limit, as the package doc says.
func TestDenialThatNoWaitHelpsHasNoRetryAfter(t *testing.T) {
	svc, err := service.New(cfg(hotlimit.FixedWindow, 3, time.Second),
		hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return neverLimiter{}, nil }))
	require.NoError(t, err)
	w := serve(httplimit.New(svc)(ok), get("/", "192.0.2.1:1"))
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Empty(t, w.Header().Values("Retry-After"))
	assert.Equal(t, `"fixedwindow-3-1s";r=0;t=1`, w.Header().Get("RateLimit"))
	var p map[string]any
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
	assert.Contains(t, p["detail"], "can never pass")
}

// waitLimiter denies every request with the RetryAfter it holds, as a
// limiter of the user's own (hotlimit.WithFactory) may.
type waitLimiter struct{ retry time.Duration }

func (waitLimiter) Allow(string) bool { return false }
func (l waitLimiter) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Limit: 3, RetryAfter: l.retry, ResetAfter: time.Second}
}

// TestRetryAfterOfAShortWaitIsAtLeastOneSecond: a denial whose RetryAfter
// rounds to no whole second (none, a nanosecond, a negative one from a
// limiter of the user's own) still tells the client to wait a second, in
// Retry-After and in the body, since "retry in 0 s" would be a loop; a
// wait of a second and a nanosecond is two.
func TestRetryAfterOfAShortWaitIsAtLeastOneSecond(t *testing.T) {
	for _, tc := range []struct {
		retry time.Duration
		want  string
	}{
		{0, "1"},
		{-time.Second, "1"},
		{time.Nanosecond, "1"},
		{999 * time.Millisecond, "1"},
		{time.Second, "1"},
		{time.Second + time.Nanosecond, "2"},
	} {
		svc, err := service.New(cfg(hotlimit.FixedWindow, 3, time.Second),
			hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
				return waitLimiter{tc.retry}, nil
			}))
		require.NoError(t, err)
		w := serve(httplimit.New(svc)(ok), get("/", "192.0.2.1:1"))
		require.Equal(t, http.StatusTooManyRequests, w.Code, "RetryAfter %v", tc.retry)
		assert.Equal(t, tc.want, w.Header().Get("Retry-After"), "RetryAfter %v", tc.retry)
		var p map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		assert.Contains(t, p["detail"], "retry in "+tc.want+" s.", "RetryAfter %v", tc.retry)
	}
}

// TestOtherLimitAllocatesOnlyItsItem: under a rule of two limits, the
// allowed path allocates what a rule of one does (the header text and the
// value slice), plus, for the other limit, as the package doc counts it,
// its RateLimit item's text and the growth of the two fields' value lists.
// The array holding the other limit's two values was moved to the heap as
// well, one allocation more per request than the doc says.
func TestOtherLimitAllocatesOnlyItsItem(t *testing.T) {
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		cfg(hotlimit.TokenBucket, 1<<20, time.Second), cfg(hotlimit.FixedWindow, 1<<20, time.Minute),
	}})
	require.NoError(t, err)
	h := httplimit.New(svc)(trivial)
	allocs, w := steadyAllocs(h)
	assert.Equal(t, 2.0+1+2, allocs, "the rule of one's two, the other item's text, the growth of both lists")
	assert.Len(t, w.h.Values("RateLimit"), 2)
	assert.Len(t, w.h.Values("RateLimit-Policy"), 2)
}

// TestZeroServiceTellsObserver: given a nil or zero service.Service, the
// middleware answered every request 500 and told its observer nothing, so
// the operator's only clue was the client's "rate limiter not configured",
// where grpclimit's observer hears why. The observer now hears of each such
// request, with an Err that says to make the service with service.New.
func TestZeroServiceTellsObserver(t *testing.T) {
	for name, svc := range map[string]*service.Service{"nil": nil, "zero": {}} {
		var events []httplimit.Event
		w := serve(httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(http.NotFoundHandler()),
			get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusInternalServerError, w.Code, name)
		require.Len(t, events, 1, name)
		assert.EqualError(t, events[0].Err, "httplimit: no service: give the middleware one made by service.New or service.NewFromRules", name)
		assert.NotNil(t, events[0].Request, name)
		assert.False(t, events[0].Decision.Allowed, name)
	}
}
