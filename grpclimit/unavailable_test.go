package grpclimit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
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

// TestEventUnavailableOnEveryPath: Event.Unavailable is set exactly when the
// limit that decided could not decide, whatever its failure policy then
// decided, on every path that decides a call (see everyPath). An observer
// thus tells a denial the failure policy made (UNAVAILABLE: no quota spent)
// from one a limit made (RESOURCE_EXHAUSTED) and from a limiter that failed
// (INTERNAL), as the client tells them by their code; under dry run, which
// fails no call, it still tells which status the call would have got.
func TestEventUnavailableOnEveryPath(t *testing.T) {
	for _, tc := range []struct {
		name        string
		backend     hotlimit.Limiter
		dryRun      bool
		code        codes.Code // every path's status
		unavailable bool
	}{
		{"fail closed", downLimiter{}, false, codes.Unavailable, true},
		{"fail closed, dry run", downLimiter{}, true, codes.OK, true},
		{"fail open", downLimiter{open: true}, false, codes.OK, true},
		{"denied", fixedDenial{retry: time.Second}, false, codes.ResourceExhausted, false},
		{"denied, dry run", fixedDenial{retry: time.Second}, true, codes.OK, false},
		{"panicked", panicky{}, false, codes.Internal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range everyPath(t, backendService(t, tc.backend), grpclimit.WithDryRun(tc.dryRun)) {
				e := r.event
				assert.Equal(t, tc.unavailable, e.Unavailable, r.path)
				code := status.Code(r.err)
				if r.path == middlewarePath && r.err != nil {
					// The middleware fails every call ResourceExhausted,
					// with the text of the status it was given.
					assert.Equal(t, codes.ResourceExhausted, code, r.path)
					code = tc.code
					assert.Contains(t, status.Convert(r.err).Message(), "code = "+code.String()+" desc", r.path)
				}
				assert.Equal(t, tc.code, code, "%s: %v", r.path, r.err)
				if code == codes.Unavailable || code == codes.ResourceExhausted {
					assert.Equal(t, code == codes.Unavailable, e.Unavailable && !e.Decision.Allowed,
						"%s: the observer tells which status the client got", r.path)
				}
			}
		})
	}
}

// TestUnavailableDenialCarriesTheWait: a call its limiter's failure policy
// denies (the backend unreachable, failing closed with a wait of 1 s) fails
// Unavailable with a google.rpc.RetryInfo of that wait, the pushback's, so
// that a client that reads the details waits as one that reads the
// trailer does; and no QuotaFailure: no quota ran out.
func TestUnavailableDenialCarriesTheWait(t *testing.T) {
	limit := cfg(hotlimit.FixedWindow, 5, time.Minute)
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{limit}},
		limitertest.OnBackend(limit, &limitertest.UnreachableRefunder{Closed: true}, service.NewLimiter))
	require.NoError(t, err)
	cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
	var trailer metadata.MD
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	st := status.Convert(err)
	require.Equal(t, codes.Unavailable, st.Code(), "%v", err)
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback))
	var retry *errdetails.RetryInfo
	for _, d := range st.Details() {
		_, isQuota := d.(*errdetails.QuotaFailure)
		assert.False(t, isQuota, "no quota ran out")
		if r, ok := d.(*errdetails.RetryInfo); ok {
			retry = r
		}
	}
	require.NotNil(t, retry, "the wait in the details")
	assert.Equal(t, time.Second, retry.GetRetryDelay().AsDuration())
}
