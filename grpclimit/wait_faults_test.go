package grpclimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestClientWaitFaultsWhenAskedAgain: what fails the ask after a wait
// fails the call as it fails one not waited for, and never the process: an
// observer or a key function that panics when the call is asked again
// fails it Internal; a context its key function's caller ends meanwhile
// fails it Canceled. None of them is sent.
func TestClientWaitFaultsWhenAskedAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  func(calls *int, cancel context.CancelFunc) grpclimit.Option
		want codes.Code
	}{
		{"observer panics", func(calls *int, _ context.CancelFunc) grpclimit.Option {
			return grpclimit.WithObserver(func(grpclimit.Event) {
				if *calls++; *calls == 2 {
					panic("observer")
				}
			})
		}, codes.Internal},
		{"key function panics", func(calls *int, _ context.CancelFunc) grpclimit.Option {
			return grpclimit.WithUser(func(context.Context, string, any) (string, bool) {
				if *calls++; *calls == 2 {
					panic("key")
				}
				return "u", true
			})
		}, codes.Internal},
		{"context ends", func(calls *int, cancel context.CancelFunc) grpclimit.Option {
			return grpclimit.WithUser(func(context.Context, string, any) (string, bool) {
				if *calls++; *calls == 2 {
					cancel()
				}
				return "u", true
			})
		}, codes.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, now := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), time.Hour)
			// The window's one call, spent for the key functions' user
			// and for the client's default, none.
			require.True(t, svc.Allow("u", unaryCall))
			require.True(t, svc.Allow("", unaryCall))
			var slept []time.Duration
			calls, sent := 0, 0
			invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				sent++
				return nil
			}
			callCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			intercept := grpclimit.UnaryClientInterceptor(svc, tc.opt(&calls, cancel), grpclimit.WithWait(clockSleep(now, &slept, nil)))
			var err error
			require.NotPanics(t, func() { err = intercept(callCtx, unaryCall, nil, nil, nil, invoker) })
			assert.Equal(t, tc.want, status.Code(err), "%v", err)
			assert.Equal(t, []time.Duration{time.Minute}, slept, "waited once, then asked again")
			assert.Equal(t, 2, calls, "asked twice")
			assert.Zero(t, sent, "not sent")
		})
	}
}

// TestServerIgnoresWithWait: given WithWait, a server interceptor still
// denies at once: a server that held calls would spend its own resources
// on the clients it limits.
func TestServerIgnoresWithWait(t *testing.T) {
	svc, now := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), time.Hour)
	var slept []time.Duration
	intercept := grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(func(context.Context, string, any) (string, bool) { return "u", true }),
		grpclimit.WithWait(clockSleep(now, &slept, nil)))
	handled := 0
	handler := func(context.Context, any) (any, error) { handled++; return nil, nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	_, err := intercept(context.Background(), nil, info, handler)
	require.NoError(t, err)
	_, err = intercept(context.Background(), nil, info, handler)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Empty(t, slept, "no wait")
	assert.Equal(t, 1, handled)
}

// TestClientWaitDoesNotWaitOutAFailurePolicy: a denial the failure policy
// of a backend that cannot decide made (Unavailable, with the policy's
// RetryInfo) fails the call at once under WithWait, as without it: no
// quota was spent, so no wait for one would help.
func TestClientWaitDoesNotWaitOutAFailurePolicy(t *testing.T) {
	remote := cfg(hotlimit.FixedWindow, 5, time.Minute)
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{remote}},
		limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{Closed: true}, service.NewLimiter))
	require.NoError(t, err)
	var now atomic.Int64
	var slept []time.Duration
	callCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, sent := 0, 0
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		sent++
		return nil
	}
	sleeps := 0
	intercept := grpclimit.UnaryClientInterceptor(svc, grpclimit.WithWait(clockSleep(&now, &slept, func() { sleeps++; cancel() })),
		grpclimit.WithObserver(func(grpclimit.Event) { events++ }))
	err = intercept(callCtx, unaryCall, nil, nil, nil, invoker)
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Zero(t, sleeps, "no wait")
	assert.Equal(t, 1, events, "asked once")
	assert.Zero(t, sent)
}
