package httplimit_test

import (
	"fmt"
	"net/http"
	"strconv"
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

// TestSeveralLimitsHeadersDescribeOnePolicy: behind the middleware, a rule
// of a token bucket with a burst and a fixed window. Once the window's
// share of its quota fell below the bucket's, the window decided and
// RateLimit-Policy advertised it (q=100), but RateLimit carried the
// bucket's remaining count, the smaller, and the rule's largest reset: an
// item that described no policy. Now each RateLimit item names the policy
// of the RateLimit-Policy item in its place, with that policy's own q, r
// and t, as a sequential model of each limit computes them: the deciding
// policy first, then the rule's other limit. A denial's Retry-After is the
// denying limit's wait.
func TestSeveralLimitsHeadersDescribeOnePolicy(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour)) // a minute boundary: the model's windows
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limitertest.BurstyBucket, limitertest.MinuteWindow}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	names := [2]string{`"` + httplimit.PolicyName(limitertest.BurstyBucket) + `"`, `"` + httplimit.PolicyName(limitertest.MinuteWindow) + `"`}
	m := limitertest.NewPairModel()
	windowDecided := 0
	for sec, calls := range limitertest.PairScript {
		now.Store(int64(time.Hour) + int64(sec)*int64(time.Second))
		for call := range calls {
			step := m.Take(sec)
			allowed, decider, retry := step.Allowed, step.Decider, step.RetryAfter
			w := serve(h, get("/", "192.0.2.1:1"))
			if allowed {
				assert.Equal(t, http.StatusOK, w.Code, "second %d call %d", sec, call)
			} else {
				assert.Equal(t, http.StatusTooManyRequests, w.Code, "second %d call %d", sec, call)
				assert.Equal(t, strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10), w.Header().Get("Retry-After"),
					"second %d call %d", sec, call)
			}
			limitertest.CheckPairItems(t, w.Header().Values("RateLimit-Policy"), w.Header().Values("RateLimit"), names, step, fmt.Sprintf("second %d call %d", sec, call))
			if decider == 1 && allowed {
				windowDecided++
			}
		}
	}
	assert.Positive(t, windowDecided, "the window decides some allowed requests")
}

// TestSeveralLimitsOfOneNameButScopeListDistinctPolicies: a rule of two
// limits that differ only in their scope, ten a minute per pair and ten a
// minute per user. Both were listed under one name, "fixedwindow-10-1m",
// so a client could not tell which RateLimit item was which, though they
// count different requests. Now the one per user is named with its scope,
// the same in every response whichever limit decides; each RateLimit item
// names a RateLimit-Policy item of the response, once; and the legacy
// fields carry the deciding limit alone.
func TestSeveralLimitsOfOneNameButScopeListDistinctPolicies(t *testing.T) {
	pair := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user := pair
	user.Scope = hotlimit.PerUser
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{pair, user}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	h := httplimit.New(svc, httplimit.WithLegacyHeaders(true), httplimit.WithAPI(func(r *http.Request) (string, bool) { return r.URL.Path, true }))(ok)
	pairName, userName := `"fixedwindow-10-1m"`, `"fixedwindow-10-1m-user"`
	// The user spends 4 of its 10 on another api: its own limit then
	// holds less than the pair's, and decides.
	for range 4 {
		require.Equal(t, http.StatusOK, serve(h, get("/other", "192.0.2.1:1")).Code)
	}
	for call := range 8 {
		w := serve(h, get("/", "192.0.2.1:1"))
		policies, limits := w.Header().Values("RateLimit-Policy"), w.Header().Values("RateLimit")
		require.Len(t, policies, 2, "call %d", call)
		require.Len(t, limits, 2, "call %d", call)
		remaining := map[string]string{}
		names := map[string]bool{}
		for _, v := range policies {
			m := limitertest.PolicyItem.FindStringSubmatch(v)
			require.NotNil(t, m, "call %d: %q", call, v)
			names[m[1]] = true
		}
		for _, v := range limits {
			m := limitertest.LimitItem.FindStringSubmatch(v)
			require.NotNil(t, m, "call %d: %q", call, v)
			assert.True(t, names[m[1]], "call %d: %s names a listed policy", call, m[1])
			remaining[m[1]] = m[2]
		}
		assert.Equal(t, map[string]bool{pairName: true, userName: true}, names, "call %d: one policy each, under names that stay", call)
		// The user has 6 left: calls 0 to 5 pass and are counted by
		// both limits; the later ones are denied and counted by neither.
		if call < 6 {
			assert.Equal(t, http.StatusOK, w.Code, "call %d", call)
		} else {
			assert.Equal(t, http.StatusTooManyRequests, w.Code, "call %d", call)
		}
		assert.Equal(t, map[string]string{pairName: strconv.Itoa(10 - min(call+1, 6)), userName: strconv.Itoa(max(5-call, 0))}, remaining,
			"call %d: each limit's own remaining count", call)
		assert.Equal(t, userName+";r="+remaining[userName]+";t=60", limits[0], "call %d: the user's limit, with less left, decides and comes first", call)
		assert.Equal(t, []string{"10"}, w.Header().Values("X-RateLimit-Limit"), "call %d: the deciding limit's alone", call)
		assert.Equal(t, []string{remaining[userName]}, w.Header().Values("X-RateLimit-Remaining"), "call %d: the deciding limit's alone", call)
	}
}

// TestRetryAfterWaitsOutEveryLimit: under 1 per second and 1 per minute,
// the second request of a minute, half a second after the first, is denied
// by the second's limit, and the minute's would deny it too: Retry-After
// waits out the minute (59.5 s, rounded up), as the package doc says, not
// the second (1), after which the retry was denied again by the minute. Each
// limit's item reads r=0 with its own reset; the retry at Retry-After
// passes.
func TestRetryAfterWaitsOutEveryLimit(t *testing.T) {
	var now atomic.Int64
	second, minute := cfg(hotlimit.FixedWindow, 1, time.Second), cfg(hotlimit.FixedWindow, 1, time.Minute)
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{second, minute}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	require.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code)

	now.Store(int64(500 * time.Millisecond))
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "60", w.Header().Get("Retry-After"), "the minute's wait")
	assert.Equal(t, []string{`"fixedwindow-1-1s";r=0;t=1`, `"fixedwindow-1-1m";r=0;t=60`}, w.Header().Values("RateLimit"))

	now.Store(int64(1500 * time.Millisecond))
	require.Equal(t, http.StatusTooManyRequests, serve(h, get("/", "192.0.2.1:1")).Code, "the minute denies a retry before Retry-After")
	now.Store(int64(500*time.Millisecond) + int64(60*time.Second))
	assert.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "the retry at Retry-After passes")
}

// TestScopedNameOfAnEmptyPolicyNameFallsBackToTheDefault: WithPolicyName
// says an empty name falls back to the default. Under a rule of two limits
// that differ only in their scope, the one per user, named with its scope
// too, was named "-user" alone: the empty name with the scope appended, not
// the default's. Both are now named as without WithPolicyName.
func TestScopedNameOfAnEmptyPolicyNameFallsBackToTheDefault(t *testing.T) {
	pair := cfg(hotlimit.FixedWindow, 10, time.Minute)
	user := pair
	user.Scope = hotlimit.PerUser
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{pair, user}})
	require.NoError(t, err)
	want := serve(httplimit.New(svc)(ok), get("/", "192.0.2.1:1")).Header().Values("RateLimit-Policy")
	require.Equal(t, []string{`"fixedwindow-10-1m";q=10;w=60`, `"fixedwindow-10-1m-user";q=10;w=60`}, want)
	h := httplimit.New(svc, httplimit.WithPolicyName(func(hotlimit.Config) string { return "" }))(ok)
	assert.Equal(t, want, serve(h, get("/", "192.0.2.1:2")).Header().Values("RateLimit-Policy"))
}

// TestSeveralLimitsPackageDocExample is the response the package
// documentation shows for a rule of a 100/min fixed window and a 10/s token
// bucket of burst 20: once the window holds 40 of 100 and the bucket 10 of
// 20, the window decides (the lesser share) and comes first, each item with
// its own q, w, r and t, 5 s into the minute.
func TestSeveralLimitsPackageDocExample(t *testing.T) {
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{window, bucket}}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	const user, api = "ip:192.0.2.1", "/"
	for _, n := range []int{20, 20, 19} { // the window then holds 41, the bucket 1
		require.True(t, svc.Take(user, api, n).Allowed)
		now.Add(int64(2 * time.Second))
	}
	now.Add(-int64(time.Second)) // 5 s into the minute: the bucket holds 11
	w := serve(httplimit.New(svc)(ok), get(api, "192.0.2.1:1"))
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{`"fixedwindow-100-1m";q=100;w=60`, `"tokenbucket-10-1s-burst20";q=20;w=2`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"fixedwindow-100-1m";r=40;t=55`, `"tokenbucket-10-1s-burst20";r=10;t=1`}, w.Header().Values("RateLimit"))
}
