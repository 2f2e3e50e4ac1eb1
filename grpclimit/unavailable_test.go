package grpclimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestRealDenialBesideAnUnreachableBackendIsResourceExhausted: a rule of a
// memory limit (1 a minute) and a limit whose backend is unreachable (its
// failure policy passes, every call fails, its report too), in either
// order. The second call is denied by the memory limit, a quota the caller
// spent: ResourceExhausted, though the backend's failure to report its
// state for that denial makes the service's error non-nil; failing it
// Unavailable would tell the client that no quota was spent. A backend
// that fails closed fails the call Unavailable. The observer sees the backend's
// error either way, and tells the two denials apart by Event.Unavailable,
// which Err alone cannot: it is set under a rule of several limits for both.
func TestRealDenialBesideAnUnreachableBackendIsResourceExhausted(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, tc := range []struct {
		rule   service.Limits
		closed bool
		codes  []codes.Code
	}{
		{service.Limits{memory, remote}, false, []codes.Code{codes.OK, codes.ResourceExhausted}},
		{service.Limits{remote, memory}, false, []codes.Code{codes.OK, codes.ResourceExhausted}},
		{service.Limits{memory, remote}, true, []codes.Code{codes.Unavailable, codes.Unavailable}},
	} {
		svc, err := service.NewFromRules(service.Rules{Default: tc.rule},
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: tc.closed}, service.NewLimiter))
		require.NoError(t, err)
		var rec recorder
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
			grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
		client := testgrpc.NewTestServiceClient(cc)
		var got []codes.Code
		for range 2 {
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			got = append(got, status.Code(err))
		}
		assert.Equal(t, tc.codes, got, "%v closed=%v", tc.rule, tc.closed)
		events := rec.all()
		require.Len(t, events, 2)
		for i, e := range events {
			assert.True(t, errors.Is(e.Err, limitertest.ErrUnreachable), "%v closed=%v event %d: the observer sees the failure", tc.rule, tc.closed, i)
			assert.Equal(t, got[i] == codes.Unavailable, e.Unavailable && !e.Decision.Allowed,
				"%v closed=%v event %d: the observer tells which status a denied client got", tc.rule, tc.closed, i)
		}
	}
}

// TestLimitersOwnTimeoutIsNoEndedCall: a limiter whose own timeout passed
// (its error wraps context.DeadlineExceeded) while the call's context
// lasts could not decide; the call did not end. A failure policy that
// passes lets the call through (OK); one that denies fails it Unavailable,
// not DeadlineExceeded. The observer sees the error either way.
func TestLimitersOwnTimeoutIsNoEndedCall(t *testing.T) {
	limit := cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, tc := range []struct {
		closed bool
		code   codes.Code
	}{{false, codes.OK}, {true, codes.Unavailable}} {
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limit}},
			limitertest.OnBackend(limit, &limitertest.TimingOutLimiter{Closed: tc.closed}, service.NewLimiter))
		require.NoError(t, err)
		var rec recorder
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
			grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))})
		_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		assert.Equal(t, tc.code, status.Code(err), "closed=%v: %v", tc.closed, err)
		events := rec.all()
		require.Len(t, events, 1)
		assert.ErrorIs(t, events[0].Err, limitertest.ErrOwnTimeout, "closed=%v", tc.closed)
	}
}
