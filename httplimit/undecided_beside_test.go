package httplimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestUndecidedLimitBesideADenialAdvertisesNoRemainingCount: under a rule
// of a memory limit and a limit on an unreachable backend, a request the
// memory limit denies lists both policies in RateLimit-Policy and in
// RateLimit only the memory limit's item: the undecided limit, after the
// denier, has no item of the failure policy's r=0;t=0 either.
func TestUndecidedLimitBesideADenialAdvertisesNoRemainingCount(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		svc := besideUnreachable(t, rule, remote)
		h := httplimit.New(svc)(ok)
		require.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "%v", rule)
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusTooManyRequests, w.Code, "%v", rule)
		assert.ElementsMatch(t, []string{`"fixedwindow-1-1m";q=1;w=60`, `"fixedwindow-5-1m";q=5;w=60`},
			w.Header().Values("RateLimit-Policy"), "%v: both policies", rule)
		assert.Equal(t, []string{`"fixedwindow-1-1m";r=0;t=60`}, w.Header().Values("RateLimit"), "%v: the denier's count alone", rule)
	}
}

// TestUndecidedLimitOfAnInnerMiddlewareAddsNoRateLimitItem: behind an
// outer middleware that wrote its fields, an inner one whose limit could not
// decide appends its RateLimit-Policy item and no RateLimit item (not even
// an empty one) to the outer's.
func TestUndecidedLimitOfAnInnerMiddlewareAddsNoRateLimitItem(t *testing.T) {
	outer, err := service.New(cfg(hotlimit.FixedWindow, 3, time.Minute), hotlimit.WithClock(func() int64 { return 1 }))
	require.NoError(t, err)
	inner, lim := overDownLimiter(t, cfg(hotlimit.FixedWindow, 5, time.Second))
	h := httplimit.New(outer)(httplimit.New(inner)(ok))
	w := serve(h, get("/", "192.0.2.1:1"))
	require.Len(t, lim.ctxs, 1, "the inner limiter was asked")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"fixedwindow-5-1s";q=5;w=1`}, w.Header().Values("RateLimit-Policy"))
	assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`}, w.Header().Values("RateLimit"), "the outer limit's count alone")
}
