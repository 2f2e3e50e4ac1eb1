package httplimit_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestUndecidedLimitAdvertisesNoRemainingCount: a limit whose backend
// cannot decide (its failure policy passes or denies, knowing nothing of
// the key) is advertised by its RateLimit-Policy item, its Config's q and
// w, but has no RateLimit item: the draft requires r in every item, and
// the failure policy's Remaining and ResetAfter (0 and 0) are no limiter's
// count. A fail-open response read r=0;t=0, telling a client it had no
// quota left on a request nothing counted; a fail-closed 503 read t=0
// beside Retry-After: 2. The legacy fields keep X-RateLimit-Limit and
// leave out Remaining and Reset, as a client reads them as r and t.
func TestUndecidedLimitAdvertisesNoRemainingCount(t *testing.T) {
	for _, open := range []bool{true, false} {
		lim := downLimiter{open: open, ctxs: make(chan context.Context, 1)}
		svc, err := service.New(cfg(hotlimit.FixedWindow, 1, time.Second),
			hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
		require.NoError(t, err)
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(ok)
		w := serve(h, get("/", "192.0.2.1:1"))
		require.Len(t, lim.ctxs, 1, "open=%v: the limiter was asked", open)
		if open {
			assert.Equal(t, http.StatusOK, w.Code)
		} else {
			assert.Equal(t, http.StatusServiceUnavailable, w.Code)
			assert.Equal(t, "2", w.Header().Get("Retry-After"), "the failure policy's wait")
		}
		assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, w.Header().Values("RateLimit-Policy"), "open=%v: the policy is the Config's", open)
		assert.Empty(t, w.Header().Values("RateLimit"), "open=%v: no remaining count nor reset nobody decided", open)
		assert.Equal(t, "1", w.Header().Get("X-RateLimit-Limit"), "open=%v", open)
		assert.Empty(t, w.Header().Values("X-RateLimit-Remaining"), "open=%v", open)
		assert.Empty(t, w.Header().Values("X-RateLimit-Reset"), "open=%v", open)
	}
}

// TestUndecidedLimitOfARuleAdvertisesOnlyTheLimitsThatDecided: under a rule
// of a memory limit and a limit on an unreachable backend, every response
// lists both policies in RateLimit-Policy, and in RateLimit only the memory
// limit's item, with its own count: the backend's failure policy's r=0;t=0
// (which, as the least share left, came first) told a client that the rule
// had no quota left while the memory limit had 2.
func TestUndecidedLimitOfARuleAdvertisesOnlyTheLimitsThatDecided(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 3, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		svc := besideUnreachable(t, rule, remote)
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(true))(ok)
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusOK, w.Code, "%v", rule)
		assert.ElementsMatch(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"fixedwindow-5-1m";q=5;w=60`},
			w.Header().Values("RateLimit-Policy"), "%v: both policies", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`}, w.Header().Values("RateLimit"), "%v: the memory limit's count alone", rule)
	}
}

// TestUndecidedInnerLimitLeavesNoOuterCountInTheLegacyFields: an outer
// middleware whose limit decided sets the three legacy fields; the inner
// one, whose limit could not decide, sets X-RateLimit-Limit, its own, and
// must not leave the outer limit's Remaining and Reset beside it, which
// would read as the inner limit's count (limit 1, remaining 99).
func TestUndecidedInnerLimitLeavesNoOuterCountInTheLegacyFields(t *testing.T) {
	outer, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	inner, lim := overDownLimiter(t, cfg(hotlimit.FixedWindow, 1, time.Second))
	h := httplimit.New(outer, httplimit.WithLegacyHeaders(true))(httplimit.New(inner, httplimit.WithLegacyHeaders(true))(ok))
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Len(t, lim.ctxs, 1, "the inner limiter was asked")
	require.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{`"fixedwindow-100-1m";r=99;t=60`}, w.Header().Values("RateLimit"), "the outer limit's item alone")
	assert.Equal(t, []string{"1"}, w.Header().Values("X-RateLimit-Limit"), "the inner one wins")
	assert.Empty(t, w.Header().Values("X-RateLimit-Remaining"), "no count of another limit beside the inner limit")
	assert.Empty(t, w.Header().Values("X-RateLimit-Reset"), "no reset of another limit beside the inner limit")
}

// TestLimitThatDecidedIsAdvertisedFirstBesideAnUndecidedOne: under a rule
// of a memory limit (3 a minute) and a limit on an unreachable backend whose
// failure policy passes, in either order, the memory limit decided the
// request: the first item of each field, and the legacy fields, are its, and
// the observer's Event names it, not Unavailable. The backend's failure
// policy's Remaining of 0, the least share left, made the backend's limit
// the deciding one: RateLimit-Policy listed it first while RateLimit, which
// has no item for it, listed the memory limit first, and the legacy fields
// carried X-RateLimit-Limit alone, though the memory limit had 2 left.
func TestLimitThatDecidedIsAdvertisedFirstBesideAnUndecidedOne(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 3, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		svc := besideUnreachable(t, rule, remote)
		var events []httplimit.Event
		h := httplimit.New(svc, httplimit.WithLegacyHeaders(true),
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok)
		w := serve(h, get("/", "192.0.2.1:1"))
		require.Equal(t, http.StatusOK, w.Code, "%v", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"fixedwindow-5-1m";q=5;w=60`},
			w.Header().Values("RateLimit-Policy"), "%v: the limit that decided first", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`}, w.Header().Values("RateLimit"), "%v", rule)
		assert.Equal(t, "3", w.Header().Get("X-RateLimit-Limit"), "%v: the deciding limit's", rule)
		assert.Equal(t, "2", w.Header().Get("X-RateLimit-Remaining"), "%v: the deciding limit's count", rule)
		assert.Equal(t, "60", w.Header().Get("X-RateLimit-Reset"), "%v", rule)
		require.Len(t, events, 1, "%v", rule)
		assert.Equal(t, memory, events[0].Config, "%v: the Event names the limit that decided", rule)
		assert.Equal(t, 2, events[0].Decision.Remaining, "%v: with its own count", rule)
		assert.False(t, events[0].Unavailable, "%v: that limit decided", rule)
		assert.ErrorIs(t, events[0].Err, limitertest.ErrUnreachable, "%v: the backend's failure is still told", rule)
	}
}

// besideUnreachable returns a service whose default rule is rule, on a
// clock that stands still, with its limit remote on a backend that cannot
// be reached and whose failure policy passes.
func besideUnreachable(t *testing.T, rule service.Limits, remote hotlimit.Config) *service.Service {
	t.Helper()
	svc, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(func() int64 { return 1 }),
		limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
	require.NoError(t, err)
	return svc
}

// overDownLimiter returns a service of the limit c on a limiter whose
// backend is down and whose failure policy passes, and that limiter.
func overDownLimiter(t *testing.T, c hotlimit.Config) (*service.Service, downLimiter) {
	t.Helper()
	lim := downLimiter{open: true, ctxs: make(chan context.Context, 1)}
	svc, err := service.New(c, hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
	require.NoError(t, err)
	return svc, lim
}
