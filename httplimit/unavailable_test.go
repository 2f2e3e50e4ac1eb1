package httplimit_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestRealDenialBesideAnUnreachableBackendIsTooManyRequests: a rule of a
// memory limit (1 a minute) and a limit whose backend is unreachable (its
// failure policy passes, every call fails, its report too), in either
// order, over a real connection. The second request is denied by the
// memory limit, a quota the client spent: 429 with Retry-After. The
// backend's failure to report its state for that denial made the
// service's error non-nil, and the middleware answered 503 "rate limiter
// unavailable", as if the backend had denied. A backend that fails closed
// still gets 503. The observer sees the backend's error either way.
func TestRealDenialBesideAnUnreachableBackendIsTooManyRequests(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, tc := range []struct {
		rule   service.Limits
		closed bool
		second int // the second request's status
	}{
		{service.Limits{memory, remote}, false, http.StatusTooManyRequests},
		{service.Limits{remote, memory}, false, http.StatusTooManyRequests},
		{service.Limits{memory, remote}, true, http.StatusServiceUnavailable},
	} {
		svc, err := service.NewFromRules(service.Rules{Default: tc.rule}, hotlimit.WithClock(func() int64 { return 1 }),
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: tc.closed}, service.NewLimiter))
		require.NoError(t, err)
		var events []httplimit.Event
		srv := httptest.NewServer(httplimit.New(svc,
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok))
		var codes []int
		for range 2 {
			resp, err := http.Get(srv.URL + "/x")
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == http.StatusTooManyRequests {
				assert.Equal(t, "60", resp.Header.Get("Retry-After"), "%v: the memory limit's window", tc.rule)
			}
		}
		srv.Close()
		first := http.StatusOK
		if tc.closed {
			first = http.StatusServiceUnavailable
		}
		assert.Equal(t, []int{first, tc.second}, codes, "%v closed=%v", tc.rule, tc.closed)
		require.Len(t, events, 2)
		for i, e := range events {
			assert.True(t, errors.Is(e.Err, limitertest.ErrUnreachable), "%v closed=%v event %d: the observer sees the failure", tc.rule, tc.closed, i)
		}
		assert.Equal(t, tc.closed, events[1].Unavailable, "%v: the limit that decided could not", tc.rule)
	}
}

// TestCompositeLimitRealDenialBesideAnUnreachableChildIsTooManyRequests: a
// rule of one limit whose limiter is a composite of a memory limiter (1 a
// minute) and one on an unreachable backend. The second request is denied
// by the memory child, a quota spent: 429, though the backend's child
// failed to report its state for that denial (Event.Err says so, and
// Unavailable does not). A backend child that fails closed denies: 503.
func TestCompositeLimitRealDenialBesideAnUnreachableChildIsTooManyRequests(t *testing.T) {
	limit := cfg(hotlimit.FixedWindow, 1, time.Minute)
	for _, closed := range []bool{false, true} {
		mem, err := fixedwindow.New(1, time.Minute, hotlimit.WithClock(func() int64 { return 1 }))
		require.NoError(t, err)
		c, err := composite.New(mem, &limitertest.UnreachableRefunder{Closed: closed})
		require.NoError(t, err)
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limit}},
			limitertest.OnBackend(limit, c, service.NewLimiter))
		require.NoError(t, err)
		var events []httplimit.Event
		srv := httptest.NewServer(httplimit.New(svc,
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok))
		var codes []int
		for range 2 {
			resp, err := http.Get(srv.URL + "/x")
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			codes = append(codes, resp.StatusCode)
		}
		srv.Close()
		want := []int{http.StatusOK, http.StatusTooManyRequests}
		if closed {
			want = []int{http.StatusServiceUnavailable, http.StatusServiceUnavailable}
		}
		assert.Equal(t, want, codes, "closed=%v", closed)
		require.Len(t, events, 2)
		assert.ErrorIs(t, events[1].Err, limitertest.ErrUnreachable, "closed=%v: the observer sees the failure", closed)
		assert.Equal(t, closed, events[1].Unavailable, "closed=%v: whether the deciding child could not decide", closed)
	}
}

// TestLimitersOwnTimeoutIsNoEndedRequest: a limiter whose own timeout
// passed (its error wraps context.DeadlineExceeded) while the request's
// context lasts could not decide; the request did not end. A failure
// policy that passes serves it; one that denies is answered 503, the
// limiter unavailable, not 429 nor "ended".
func TestLimitersOwnTimeoutIsNoEndedRequest(t *testing.T) {
	limit := cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, closed := range []bool{false, true} {
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limit}},
			limitertest.OnBackend(limit, &limitertest.TimingOutLimiter{Closed: closed}, service.NewLimiter))
		require.NoError(t, err)
		var events []httplimit.Event
		srv := httptest.NewServer(httplimit.New(svc,
			httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok))
		resp, err := http.Get(srv.URL + "/x")
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		srv.Close()
		if closed {
			assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
			assert.Contains(t, string(body), "rate limiter is unavailable")
		} else {
			assert.Equal(t, http.StatusOK, resp.StatusCode, "the failure policy passed a request that lasts")
		}
		require.Len(t, events, 1)
		assert.ErrorIs(t, events[0].Err, limitertest.ErrOwnTimeout, "closed=%v", closed)
		assert.True(t, events[0].Unavailable, "closed=%v", closed)
	}
}

// TestRealDenialBesideAFailingLimitWhoseRequestEndsAfterItsDecisionIsTooManyRequests:
// under a rule of a memory limit (1 a minute) and a limit on an unreachable
// backend that fails open, the second request is denied by the memory
// limit, a quota spent, with the backend's error in Event.Err. Its context
// ends after the decision, before the deny handler runs (the observer
// cancels it, between the two): DenyProblem read the context again and,
// seeing it ended beside an error, answered 503 "ended before it was
// served", where a request that ended after its decision is answered as
// decided: 429, as a request whose Event.Err is nil is.
func TestRealDenialBesideAFailingLimitWhoseRequestEndsAfterItsDecisionIsTooManyRequests(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, backend := range []hotlimit.Limiter{&limitertest.UnreachableRefunder{}, nil} {
		opts := []hotlimit.Option{hotlimit.WithClock(func() int64 { return 1 })}
		if backend != nil {
			opts = append(opts, limitertest.OnBackend(remote, backend, service.NewLimiter))
		}
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}}, opts...)
		require.NoError(t, err)
		var cancel context.CancelFunc
		var events []httplimit.Event
		h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) {
			events = append(events, e)
			cancel() // the client leaves between the decision and the deny handler
		}))(ok)
		var codes []int
		for range 2 {
			ctx, c := context.WithCancel(context.Background())
			cancel = c
			codes = append(codes, serve(h, get("/", "192.0.2.1:1").WithContext(ctx)).Code)
		}
		failing := backend != nil
		require.Len(t, events, 2)
		assert.Equal(t, failing, events[1].Err != nil, "failing=%v: the backend's error beside the denial", failing)
		assert.False(t, events[1].Unavailable, "failing=%v: the memory limit decided", failing)
		assert.False(t, events[1].Ended, "failing=%v: the request ended after its decision", failing)
		assert.Equal(t, []int{http.StatusOK, http.StatusTooManyRequests}, codes, "failing=%v", failing)
	}
}
