package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// downLimiter stands for a limiter on a backend that is down (Redis, say):
// it takes a context, and its failure policy passes (open) or denies
// (closed). It records the context it was given.
type downLimiter struct {
	open bool
	ctxs chan context.Context
}

var errBackendDown = errors.New("redis: connection refused")

func (l downLimiter) decision() hotlimit.Decision {
	if l.open {
		return hotlimit.Decision{Allowed: true, Limit: 1}
	}
	return hotlimit.Decision{Limit: 1, RetryAfter: 2 * time.Second}
}
func (l downLimiter) Allow(string) bool                  { return l.open }
func (l downLimiter) Take(string, int) hotlimit.Decision { return l.decision() }
func (l downLimiter) TakeContext(ctx context.Context, _ string, _ int) (hotlimit.Decision, error) {
	l.ctxs <- ctx
	return l.decision(), errBackendDown
}

type reqKey struct{}

// TestBackendFailureIsServiceUnavailable: a limiter that cannot decide is
// asked with the request's context; when its failure policy denies, the
// answer is 503 Service Unavailable, not 429 (the client spent no quota);
// when it passes, the request goes on. The observer sees the error either
// way.
func TestBackendFailureIsServiceUnavailable(t *testing.T) {
	for _, open := range []bool{false, true} {
		lim := downLimiter{open: open, ctxs: make(chan context.Context, 1)}
		svc, err := service.New(cfg(hotlimit.FixedWindow, 1, time.Second),
			hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return lim, nil }))
		require.NoError(t, err)
		var events []httplimit.Event
		h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { events = append(events, e) }))(ok)
		r := get("/", "192.0.2.1:1")
		r = r.WithContext(context.WithValue(r.Context(), reqKey{}, "this request"))
		w := serve(h, r)

		require.Len(t, lim.ctxs, 1, "open=%v: the limiter was asked with a context", open)
		assert.Equal(t, "this request", (<-lim.ctxs).Value(reqKey{}), "open=%v: the request's context", open)
		require.Len(t, events, 1)
		assert.ErrorIs(t, events[0].Err, errBackendDown, "open=%v", open)
		if open {
			assert.Equal(t, http.StatusOK, w.Code, "fail open: the request goes on")
			continue
		}
		assert.Equal(t, http.StatusServiceUnavailable, w.Code, "fail closed: unavailable, not a quota spent")
		assert.Equal(t, "2", w.Header().Get("Retry-After"))
		assert.Equal(t, "application/problem+json", w.Header().Get("Content-Type"))
		var p struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
			Detail string `json:"detail"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &p))
		assert.Equal(t, http.StatusServiceUnavailable, p.Status)
		assert.Equal(t, "Service Unavailable", p.Title)
		assert.Contains(t, p.Detail, "rate limiter is unavailable")
		assert.NotContains(t, p.Detail, "connection refused", "the backend's error stays on the server")
	}
}
