package bench

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/throttled/throttled/v2"
	"github.com/ulule/limiter/v3"
	ululehttp "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// These tests compare the headers of httplimit with WithLegacyHeaders(true)
// with those of throttled's HTTPRateLimiterCtx and ulule/limiter's stdlib
// middleware, request for request on one clock, under the mappings
// TestGCRADecidesAsThrottled and TestFixedWindowCountsAsUlule prove.

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })

func serveOne(h http.Handler) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestLegacyHeadersAsThrottled: under PerMin(10) with MaxBurst 4 and
// gcra.New(5, 30 s), the status and X-RateLimit-Limit (MaxBurst+1),
// X-RateLimit-Remaining, X-RateLimit-Reset (seconds until full, rounded
// up) and Retry-After (whole seconds, rounded up, on a denial only) are
// the same on every response: a client of throttled's headers reads
// httplimit's alike.
func TestLegacyHeadersAsThrottled(t *testing.T) {
	now := int64(1e9) * int64(time.Second)
	store := &fakeGCRAStore{now: &now, tats: map[string]int64{}}
	th, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerMin(10), MaxBurst: 4})
	require.NoError(t, err)
	theirs := (&throttled.HTTPRateLimiterCtx{RateLimiter: th, VaryBy: &throttled.VaryBy{RemoteAddr: true}}).RateLimit(okHandler)
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: 30 * time.Second},
		hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	ours := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(okHandler)
	rng := rand.New(rand.NewPCG(1, 2))
	var denied int
	for i := range 300 {
		switch r := rng.IntN(10); {
		case r < 4:
		case r < 7:
			now += rng.Int64N(int64(6 * time.Second))
		case r < 9:
			now += int64(6*time.Second) + int64(rng.IntN(3)) - 1
		default:
			now += rng.Int64N(int64(40 * time.Second))
		}
		a, b := serveOne(theirs), serveOne(ours)
		require.Equal(t, a.Code, b.Code, "request %d", i)
		if a.Code == http.StatusTooManyRequests {
			denied++
		}
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
			assert.Equal(t, a.Header().Values(h), b.Header().Values(h), "request %d: %s", i, h)
		}
	}
	require.Positive(t, denied)
}

// TestLegacyHeadersAsUlule: under 3 requests a minute, fixedwindow.New(3,
// time.Minute) and ulule's memory store, with the key's first request at
// the start of an aligned minute (so that the windows coincide), give the
// same status, X-RateLimit-Limit and X-RateLimit-Remaining; ulule's
// X-RateLimit-Reset is the Unix time, in seconds, at which the window
// ends, httplimit's the seconds from now until it does; ulule sends no
// Retry-After, httplimit one of the seconds until the window ends.
func TestLegacyHeadersAsUlule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rate := limiter.Rate{Period: time.Minute, Limit: 3}
		theirs := ululehttp.NewMiddleware(limiter.New(memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "p"}), rate)).Handler(okHandler)
		svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
			hotlimit.WithClock(func() int64 { return time.Now().UnixNano() }))
		require.NoError(t, err)
		ours := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(okHandler)
		require.Zero(t, time.Now().UnixNano()%int64(time.Minute), "the bubble starts on a whole minute")
		end := time.Now().Add(time.Minute).Unix()
		for i, want := range []struct {
			sleep      time.Duration
			code       int
			remaining  string
			retryAfter []string
		}{
			{0, 200, "2", nil},
			{10 * time.Second, 200, "1", nil},
			{10 * time.Second, 200, "0", nil},
			{10 * time.Second, 429, "0", []string{"30"}},
		} {
			time.Sleep(want.sleep)
			a, b := serveOne(theirs), serveOne(ours)
			assert.Equal(t, want.code, a.Code, "request %d", i)
			assert.Equal(t, want.code, b.Code, "request %d", i)
			for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining"} {
				assert.Equal(t, a.Header().Values(h), b.Header().Values(h), "request %d: %s", i, h)
			}
			assert.Equal(t, want.remaining, b.Header().Get("X-RateLimit-Remaining"), "request %d", i)
			// Reset: a Unix time against the seconds from now.
			assert.Equal(t, strconv.FormatInt(end, 10), a.Header().Get("X-RateLimit-Reset"), "request %d", i)
			assert.Equal(t, strconv.FormatInt(end-time.Now().Unix(), 10), b.Header().Get("X-RateLimit-Reset"), "request %d", i)
			assert.Empty(t, a.Header().Values("Retry-After"), "request %d: ulule sends none", i)
			assert.Equal(t, want.retryAfter, b.Header().Values("Retry-After"), "request %d", i)
		}
	})
}

// TestClientKeysAsThrottledAndUlule: two IPv6 clients of one /64 share a
// key in httplimit by default and have one each in throttled (VaryBy
// RemoteAddr) and ulule (its default IPv6 mask is /128);
// httplimit.ClientIP(httplimit.IPv6Prefix(128)) keys each address, as
// README says; IPv4 clients have a key each everywhere.
func TestClientKeysAsThrottledAndUlule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := int64(1e9) * int64(time.Second)
		store := &fakeGCRAStore{now: &now, tats: map[string]int64{}}
		th, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerMin(1), MaxBurst: 0})
		require.NoError(t, err)
		thr := (&throttled.HTTPRateLimiterCtx{RateLimiter: th, VaryBy: &throttled.VaryBy{RemoteAddr: true}}).RateLimit(okHandler)
		ul := ululehttp.NewMiddleware(limiter.New(memory.NewStoreWithOptions(limiter.StoreOptions{Prefix: "p"}), limiter.Rate{Period: time.Minute, Limit: 1})).Handler(okHandler)
		newOurs := func(opts ...httplimit.Option) http.Handler {
			svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute},
				hotlimit.WithClock(func() int64 { return now }))
			require.NoError(t, err)
			return httplimit.New(svc, append(opts, httplimit.WithLegacyHeaders(true))...)(okHandler)
		}
		def, each := newOurs(), newOurs(httplimit.WithUser(httplimit.ClientIP(httplimit.IPv6Prefix(128))))
		from := func(h http.Handler, addr string) int {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = addr
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w.Code
		}
		for _, pair := range [][2]string{{"[2001:db8::1]:1234", "[2001:db8::2]:1234"}, {"192.0.2.1:1234", "192.0.2.2:1234"}} {
			for name, h := range map[string]http.Handler{"throttled": thr, "ulule": ul, "IPv6Prefix(128)": each, "default": def} {
				require.Equal(t, http.StatusOK, from(h, pair[0]), "%s: %s", name, pair[0])
				want := http.StatusOK
				if name == "default" && pair[0][0] == '[' {
					want = http.StatusTooManyRequests // one /64, one key
				}
				assert.Equal(t, want, from(h, pair[1]), "%s: %s after %s", name, pair[1], pair[0])
				assert.Equal(t, http.StatusTooManyRequests, from(h, pair[0]), "%s: %s again", name, pair[0])
			}
		}
	})
}
