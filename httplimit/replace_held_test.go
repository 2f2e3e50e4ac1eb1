package httplimit_test

import (
	"net/http"
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

// TestReplaceDuringARequestAdvertisesTheRuleThatDecided: a request under a
// rule of two limits waits inside the second limit's limiter, the first
// taken, while a Replace installs another rule. The response advertises the
// limits of the rule that decided it, each with its own numbers, not the
// rule in force since: the fields and the decision come from one snapshot
// of the rules.
func TestReplaceDuringARequestAdvertisesTheRuleThatDecided(t *testing.T) {
	fw := cfg(hotlimit.FixedWindow, 3, time.Minute)
	tb := cfg(hotlimit.TokenBucket, 10, time.Minute)
	next := cfg(hotlimit.GCRA, 7, time.Minute)
	g := limitertest.NewGate(service.NewLimiter)
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{fw, tb}}, hotlimit.WithClock(now.Load), hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)
	handler := httplimit.New(svc)(ok)

	g.HoldNext(tb)
	done := make(chan *http.Response)
	go func() { done <- serve(handler, get("/", "192.0.2.1:1")).Result() }()
	g.Entered(t) // the fixed window took, the token bucket about to
	require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{next}}))
	g.Release()
	resp := <-done
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"tokenbucket-10-1m";q=10;w=60`}, resp.Header.Values("RateLimit-Policy"),
		"the rule that decided")
	assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`, `"tokenbucket-10-1m";r=9;t=6`}, resp.Header.Values("RateLimit"),
		"each with its own numbers")

	after := serve(handler, get("/", "192.0.2.1:1"))
	assert.Equal(t, []string{`"gcra-7-1m";q=7;w=60`}, after.Header().Values("RateLimit-Policy"), "the next request, the rule in force")
}
