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

// TestDenialLeavesALaterSlidingLogAsItWas: behind the middleware, a rule of
// 2 per minute (a fixed window) and a sliding log of 2 per minute, on a
// clock of its own. The requests at 0 s and 30 s pass; the one at 35 s is
// denied by the window, and the log, which reported itself spent, is asked
// about it once its clock has moved past the request at 0 s (a race of
// concurrent requests, forced here). It was asked by a Take, admitted the
// request and, given it back, held it in place of the request at 30 s
// (see slidinglog.Limiter.Refund): at 95 s, in a new window, the second
// request was refused 429 with Retry-After 26. The log is asked without a
// Take now: both requests at 95 s pass.
func TestDenialLeavesALaterSlidingLogAsItWas(t *testing.T) {
	var now atomic.Int64 // the window's
	start := int64(1000 * time.Hour)
	now.Store(start)
	var clock limitertest.HookClock // the log's, from 0
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Algorithm == hotlimit.SlidingLog {
			opts = append(opts[:len(opts):len(opts)], hotlimit.WithClock(clock.Read))
		}
		return service.NewLimiter(c, opts...)
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute},
	}}, hotlimit.WithClock(now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	h := httplimit.New(svc)(ok)
	at := func(sec int64) {
		now.Store(start + sec*int64(time.Second))
		clock.Now.Store(sec * int64(time.Second))
	}
	for _, sec := range []int64{0, 30} {
		at(sec)
		require.Equal(t, http.StatusOK, serve(h, get("/", "192.0.2.1:1")).Code, "at %d s", sec)
	}

	at(35)
	reported := false
	clock.Hook = func() { // at the log's report
		reported = true
		clock.Now.Store(int64(61 * time.Second)) // the request at 0 s has left
	}
	w := serve(h, get("/", "192.0.2.1:1"))
	require.True(t, reported, "the log reported its state")
	require.Equal(t, http.StatusTooManyRequests, w.Code, "the window is spent")
	assert.Equal(t, "25", w.Header().Get("Retry-After"), "the window's wait")

	at(95) // the request at 30 s has left the log; the window is a new one
	for call := range 2 {
		w := serve(h, get("/", "192.0.2.1:1"))
		assert.Equal(t, http.StatusOK, w.Code, "call %d at 95 s: Retry-After %q", call, w.Header().Get("Retry-After"))
	}
}
