package grpclimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestDryRunNoServiceLetsThrough pins what httplimit's middleware now does
// too: interceptors given no service (nil, or a zero service.Service) let
// every call through under WithDryRun, a unary call and a stream alike, over
// a real connection, and tell the observer why; without dry run the call
// fails with codes.Internal and its handler is not reached.
func TestDryRunNoServiceLetsThrough(t *testing.T) {
	for name, svc := range map[string]*service.Service{"nil": nil, "zero": {}} {
		for _, dry := range []bool{true, false} {
			var rec recorder
			opts := []grpclimit.Option{grpclimit.WithDryRun(dry), grpclimit.WithObserver(rec.observe)}
			ts := &testService{}
			client := testgrpc.NewTestServiceClient(serveTCP(t, ts, []grpc.ServerOption{
				grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, opts...)),
				grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, opts...)),
			}))

			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			stream, serr := client.StreamingOutputCall(ctx(t), &testgrpc.StreamingOutputCallRequest{})
			require.NoError(t, serr, name)
			_, serr = stream.Recv()
			if dry {
				assert.NoError(t, err, "%s: a dry run never blocks", name)
				assert.NoError(t, serr, "%s: a dry run never blocks", name)
				assert.Equal(t, int32(1), ts.unary.Load(), name)
				assert.Equal(t, int32(1), ts.received.Load(), name)
			} else {
				assert.Equal(t, codes.Internal, status.Code(err), "%s: %v", name, err)
				assert.Equal(t, codes.Internal, status.Code(serr), "%s: %v", name, serr)
				assert.Zero(t, ts.unary.Load(), "%s: no call goes through unlimited", name)
				assert.Zero(t, ts.received.Load(), "%s: no stream goes through unlimited", name)
			}
			events := rec.all()
			require.Len(t, events, 2, "%s dry=%v", name, dry)
			for _, e := range events {
				assert.EqualError(t, e.Err, "grpclimit: no service: give the interceptor one made by service.New or service.NewFromRules", name)
				assert.Equal(t, dry, e.DryRun, name)
			}
		}
	}
}

// TestNoServiceServesExempt pins what httplimit's middleware now does too:
// interceptors given no service serve the methods they exempt, unreported,
// with or without dry run, and fail every other call without dry run.
func TestNoServiceServesExempt(t *testing.T) {
	for name, svc := range map[string]*service.Service{"nil": nil, "zero": {}} {
		for _, dry := range []bool{false, true} {
			var rec recorder
			ts := &testService{}
			opts := []grpclimit.Option{grpclimit.WithDryRun(dry), grpclimit.WithObserver(rec.observe),
				grpclimit.WithExempt(func(m string) bool { return m == unaryCall })}
			client := testgrpc.NewTestServiceClient(serveTCP(t, ts, []grpc.ServerOption{
				grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, opts...)),
				grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, opts...)),
			}))
			_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
			assert.NoError(t, err, "%s dry=%v: an exempt method is never limited", name, dry)
			assert.Equal(t, int32(1), ts.unary.Load(), name)
			stream, err := client.StreamingOutputCall(ctx(t), &testgrpc.StreamingOutputCallRequest{})
			require.NoError(t, err, name)
			_, err = stream.Recv()
			if dry {
				assert.NoError(t, err, "%s: a dry run never blocks", name)
			} else {
				assert.Equal(t, codes.Internal, status.Code(err), "%s: %v", name, err)
			}
			events := rec.all()
			require.Len(t, events, 1, "%s dry=%v: an exempt call is not reported", name, dry)
			assert.NotEqual(t, unaryCall, events[0].FullMethod, name)
		}
	}
}
