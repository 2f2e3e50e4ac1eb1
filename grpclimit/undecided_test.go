package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// TestUndecidedLimitAdvertisesNoRemainingCount: a limit whose backend
// cannot decide (its failure policy passes or denies, knowing nothing of
// the key) is advertised by its ratelimit-policy item, its Config's q and
// w, but has no ratelimit item: the draft requires r in every item, and
// the failure policy's Remaining and ResetAfter (0 and 0) are no limiter's
// count. A fail-open call read r=0;t=0 in its headers, telling a client it
// had no quota left on a call nothing counted; a fail-closed UNAVAILABLE
// read it in its trailers beside the pushback, which stays the failure
// policy's wait.
func TestUndecidedLimitAdvertisesNoRemainingCount(t *testing.T) {
	for _, open := range []bool{true, false} {
		factory := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
			return downLimiter{open: open}, nil
		})
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0, factory)
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
		var header, trailer metadata.MD
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
		md := header
		if open {
			require.NoError(t, err)
		} else {
			require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
			assert.Empty(t, header, "Trailers-Only")
			assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback), "the failure policy's wait")
			md = trailer
		}
		assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, md.Get(grpclimit.MetadataPolicy), "open=%v: the policy is the Config's", open)
		assert.Empty(t, md.Get(grpclimit.MetadataRateLimit), "open=%v: no remaining count nor reset nobody decided", open)
	}
}

// TestUndecidedLimitOfARuleAdvertisesOnlyTheLimitsThatDecided: under a rule
// of a memory limit and a limit on an unreachable backend, every response
// lists both policies in ratelimit-policy, and in ratelimit only the memory
// limit's item, with its own count: the backend's failure policy's r=0;t=0
// (which, as the least share left, came first) told a client that the rule
// had no quota left while the memory limit had 2.
func TestUndecidedLimitOfARuleAdvertisesOnlyTheLimitsThatDecided(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 3, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		svc, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(func() int64 { return 1 }),
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
		require.NoError(t, err)
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
		var header metadata.MD
		_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "%v", rule)
		assert.ElementsMatch(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"fixedwindow-5-1m";q=5;w=60`},
			header.Get(grpclimit.MetadataPolicy), "%v: both policies", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`}, header.Get(grpclimit.MetadataRateLimit), "%v: the memory limit's count alone", rule)
	}
}

// TestLimitThatDecidedIsAdvertisedFirstBesideAnUndecidedOne: under a rule
// of a memory limit (3 a minute) and a limit on an unreachable backend whose
// failure policy passes, in either order, the memory limit decided the call:
// the first item of each field is its, and the observer's Event names it,
// not Unavailable. The backend's failure policy's Remaining of 0, the least
// share left, made the backend's limit the deciding one: ratelimit-policy
// listed it first while ratelimit, which has no item for it, listed the
// memory limit first.
func TestLimitThatDecidedIsAdvertisedFirstBesideAnUndecidedOne(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 3, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	for _, rule := range []service.Limits{{memory, remote}, {remote, memory}} {
		svc, err := service.NewFromRules(service.Rules{Default: rule}, hotlimit.WithClock(func() int64 { return 1 }),
			limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
		require.NoError(t, err)
		events := make(chan grpclimit.Event, 2)
		cc := serveBufconn(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
			grpclimit.WithObserver(func(e grpclimit.Event) { events <- e })))})
		var header metadata.MD
		_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "%v", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";q=3;w=60`, `"fixedwindow-5-1m";q=5;w=60`},
			header.Get(grpclimit.MetadataPolicy), "%v: the limit that decided first", rule)
		assert.Equal(t, []string{`"fixedwindow-3-1m";r=2;t=60`}, header.Get(grpclimit.MetadataRateLimit), "%v", rule)
		e := <-events // one decision: the call's
		assert.Equal(t, memory, e.Config, "%v: the Event names the limit that decided", rule)
		assert.Equal(t, 2, e.Decision.Remaining, "%v: with its own count", rule)
		assert.False(t, e.Unavailable, "%v: that limit decided", rule)
		assert.ErrorIs(t, e.Err, limitertest.ErrUnreachable, "%v: the backend's failure is still told", rule)
	}
}
