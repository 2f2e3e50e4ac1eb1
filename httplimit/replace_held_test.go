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
	"github.com/hotlimit/hotlimit/service"
)

// heldTakes is a factory whose limiters stop the next take of one limit
// inside its limiter, after the service chose it and before it counts,
// until the test lets it go.
type heldTakes struct {
	hold   atomic.Pointer[hotlimit.Config]
	inside chan struct{}
	goOn   chan struct{}
}

func (h *heldTakes) factory(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := service.NewLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	return &heldLimiter{Refunder: l.(hotlimit.Refunder), h: h, c: c}, nil
}

type heldLimiter struct {
	hotlimit.Refunder
	h *heldTakes
	c hotlimit.Config
}

func (l *heldLimiter) wait() {
	if p := l.h.hold.Load(); p != nil && *p == l.c && l.h.hold.CompareAndSwap(p, nil) {
		l.h.inside <- struct{}{}
		<-l.h.goOn
	}
}

func (l *heldLimiter) Take(key string, n int) hotlimit.Decision {
	l.wait()
	return l.Refunder.Take(key, n)
}

func (l *heldLimiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	l.wait()
	return l.Refunder.TakeReceipt(key, n)
}

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
	h := &heldTakes{inside: make(chan struct{}), goOn: make(chan struct{})}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{fw, tb}}, hotlimit.WithClock(now.Load), hotlimit.WithFactory(h.factory))
	require.NoError(t, err)
	handler := httplimit.New(svc)(ok)

	h.hold.Store(&tb)
	done := make(chan *http.Response)
	go func() { done <- serve(handler, get("/", "192.0.2.1:1")).Result() }()
	select {
	case <-h.inside: // the fixed window took, the token bucket about to
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no take was held")
	}
	require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{next}}))
	close(h.goOn)
	resp := <-done
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"tokenbucket-10-1m";q=10;w=60`}, resp.Header.Values("RateLimit-Policy"),
		"the rule that decided")
	assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`, `"tokenbucket-10-1m";r=9;t=6`}, resp.Header.Values("RateLimit"),
		"each with its own numbers")

	after := serve(handler, get("/", "192.0.2.1:1"))
	assert.Equal(t, []string{`"gcra-7-1m";q=7;w=60`}, after.Header().Values("RateLimit-Policy"), "the next request, the rule in force")
}
