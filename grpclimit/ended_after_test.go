package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// TestRealDenialBesideAFailingLimitWhoseCallEndsAfterItsDecisionIsResourceExhausted:
// under a rule of a memory limit (1 a minute) and a limit on an unreachable
// backend that fails open, the second call on every path that decides one
// is denied by the memory limit, a quota spent, with the backend's error in
// Event.Err. Its context ends after the decision, before the call is
// answered (the observer cancels it, between the two; a stream's context
// when its second message is denied). The status is the
// decision's, ResourceExhausted, as for a call whose Event.Err is nil: a
// call that ended after its decision is answered as decided, never as one
// that ended before it (Canceled), which would tell the client, and a
// server's error metrics, that no quota was spent.
func TestRealDenialBesideAFailingLimitWhoseCallEndsAfterItsDecisionIsResourceExhausted(t *testing.T) {
	memory, remote := cfg(hotlimit.FixedWindow, 1, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	fromPeer := func(ctx context.Context) context.Context {
		return peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
	}
	for _, failing := range []bool{true, false} {
		for _, path := range []string{"unary", "stream start", "received message", "client unary", "client stream", middlewarePath} {
			opts := []hotlimit.Option{hotlimit.WithClock(func() int64 { return 1 })}
			if failing {
				opts = append(opts, limitertest.OnBackend(remote, &limitertest.UnreachableRefunder{}, service.NewLimiter))
			}
			svc, err := service.NewFromRules(service.Rules{Default: service.Limits{memory, remote}}, opts...)
			require.NoError(t, err)
			var cancel context.CancelFunc
			var events []grpclimit.Event
			observer := grpclimit.WithObserver(func(e grpclimit.Event) {
				events = append(events, e)
				if !e.Decision.Allowed {
					cancel() // the caller leaves between the decision and the answer
				}
			})
			var last context.Context // the last call's
			call := func() context.Context {
				ctx, c := context.WithCancel(fromPeer(context.Background()))
				t.Cleanup(c)
				cancel, last = c, ctx
				return ctx
			}
			served := 0
			var errs []error
			switch path {
			case "unary":
				icpt := grpclimit.UnaryServerInterceptor(svc, observer)
				for range 2 {
					_, err := icpt(call(), nil, &grpc.UnaryServerInfo{FullMethod: unaryCall}, func(context.Context, any) (any, error) {
						served++
						return nil, nil
					})
					errs = append(errs, err)
				}
			case "stream start":
				icpt := grpclimit.StreamServerInterceptor(svc, observer)
				for range 2 {
					errs = append(errs, icpt(nil, answeredStream{ctx: call()}, &grpc.StreamServerInfo{FullMethod: inputCall}, func(any, grpc.ServerStream) error {
						served++
						return nil
					}))
				}
			case "received message":
				icpt := grpclimit.StreamServerInterceptor(svc, observer, grpclimit.WithStreamMessages(true))
				err := icpt(nil, answeredStream{ctx: call()}, &grpc.StreamServerInfo{FullMethod: duplexCall}, func(_ any, ss grpc.ServerStream) error {
					for range 2 {
						errs = append(errs, ss.RecvMsg(new(struct{})))
					}
					return nil
				})
				require.NoError(t, err)
				events = events[1:] // the stream's start, which passed
			case "client unary", "client stream":
				unary := grpclimit.UnaryClientInterceptor(svc, observer)
				stream := grpclimit.StreamClientInterceptor(svc, observer)
				for range 2 {
					if path == "client unary" {
						errs = append(errs, unary(call(), emptyCall, nil, nil, nil, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
							served++
							return nil
						}))
						continue
					}
					_, err := stream(call(), &grpc.StreamDesc{}, nil, inputCall, func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
						served++
						return nil, nil
					})
					errs = append(errs, err)
				}
			case middlewarePath:
				lim := grpclimit.MiddlewareLimiter(svc, observer)
				for range 2 {
					errs = append(errs, lim.Limit(call()))
				}
			}
			require.Len(t, events, 2, "%s failing=%v", path, failing)
			require.Error(t, last.Err(), "%s failing=%v: the denied call's context ended", path, failing)
			assert.Equal(t, failing, events[1].Err != nil, "%s failing=%v: the backend's error beside the denial", path, failing)
			assert.False(t, events[1].Unavailable, "%s failing=%v: the memory limit decided", path, failing)
			require.Len(t, errs, 2)
			assert.NoError(t, errs[0], "%s failing=%v", path, failing)
			assert.Equal(t, codes.ResourceExhausted, status.Code(errs[1]), "%s failing=%v: %v", path, failing, errs[1])
			if path != "received message" && path != middlewarePath {
				assert.Equal(t, 1, served, "%s failing=%v: the denied call is not served", path, failing)
			}
		}
	}
}

// answeredStream is a server stream whose every RecvMsg succeeds at once
// and whose metadata goes nowhere, standing in for grpc-go's when the
// interceptor is called directly.
type answeredStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s answeredStream) Context() context.Context    { return s.ctx }
func (s answeredStream) RecvMsg(any) error           { return nil }
func (s answeredStream) SetHeader(metadata.MD) error { return nil }
func (s answeredStream) SetTrailer(metadata.MD)      {}
