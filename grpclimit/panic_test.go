package grpclimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
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

// TestPanickingHandlerBehindARecoveryCarriesTheFields: a recovery
// interceptor outside the limit (as go-grpc-middleware's is, chained before
// the interceptors it guards) turns a handler's panic into an INTERNAL
// status. The call was counted, so, as for any call that proceeds and then
// fails, its trailers carry the RateLimit metadata: the panic unwinds
// through the limit's interceptor, which must give them before it does.
func TestPanickingHandlerBehindARecoveryCarriesTheFields(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	panicUnary := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		panic("handler bug")
	}
	panicStream := func(any, grpc.ServerStream, *grpc.StreamServerInfo, grpc.StreamHandler) error {
		panic("handler bug")
	}
	internal := recovery.WithRecoveryHandler(func(p any) error { return status.Errorf(codes.Internal, "panic: %v", p) })
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(internal), grpclimit.UnaryServerInterceptor(svc), panicUnary),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(internal), grpclimit.StreamServerInterceptor(svc), panicStream),
	})
	client := testgrpc.NewTestServiceClient(cc)

	var trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Equal(t, []string{`"fixedwindow-10-1m";q=10;w=60`}, trailer[grpclimit.MetadataPolicy])
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, trailer[grpclimit.MetadataRateLimit])

	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Equal(t, []string{`"fixedwindow-10-1m";q=10;w=60`}, stream.Trailer().Get(grpclimit.MetadataPolicy))
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, stream.Trailer().Get(grpclimit.MetadataRateLimit))
}

// TestPanicAfterTheHeadersKeepsTheFieldsWhereTheyWent: a handler that
// panics after its response headers have left gave the RateLimit metadata
// already, or could not: a stream's first message took them in its
// headers, so the trailers the recovery answers with do not repeat them; a
// unary handler that sent its own headers left them for the trailers, which
// carry them.
func TestPanicAfterTheHeadersKeepsTheFieldsWhereTheyWent(t *testing.T) {
	const item = `"fixedwindow-10-1m";r=9;t=60`
	internal := recovery.WithRecoveryHandler(func(p any) error { return status.Errorf(codes.Internal, "panic: %v", p) })
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	sentThenPanic := func(_ any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, _ grpc.StreamHandler) error {
		if err := ss.SendMsg(&testgrpc.StreamingOutputCallResponse{}); err != nil {
			return err
		}
		panic("handler bug")
	}
	headerThenPanic := func(ctx context.Context, _ any, _ *grpc.UnaryServerInfo, _ grpc.UnaryHandler) (any, error) {
		_ = grpc.SendHeader(ctx, metadata.Pairs("x-own", "1"))
		panic("handler bug")
	}
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(recovery.UnaryServerInterceptor(internal), grpclimit.UnaryServerInterceptor(svc), headerThenPanic),
		grpc.ChainStreamInterceptor(recovery.StreamServerInterceptor(internal), grpclimit.StreamServerInterceptor(svc), sentThenPanic),
	})
	client := testgrpc.NewTestServiceClient(cc)

	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	header, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{item}, header.Get(grpclimit.MetadataRateLimit))
	assert.Empty(t, stream.Trailer().Get(grpclimit.MetadataRateLimit), "given once, in the headers")

	var trailer metadata.MD
	header = nil
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Equal(t, []string{"1"}, header.Get("x-own"))
	assert.Empty(t, header.Get(grpclimit.MetadataRateLimit))
	assert.Equal(t, []string{item}, trailer.Get(grpclimit.MetadataRateLimit))

}

// TestPanicRecoveredInsideTheLimitCarriesTheFields: a recovery interceptor
// chained inside the limit turns the handler's panic into an error before
// it reaches the limit, which gives the call's RateLimit metadata to its
// trailers as for any failure, leaving the response Trailers-Only.
func TestPanicRecoveredInsideTheLimitCarriesTheFields(t *testing.T) {
	internal := recovery.WithRecoveryHandler(func(p any) error { return status.Errorf(codes.Internal, "panic: %v", p) })
	panics := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		panic("handler bug")
	}
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc), recovery.UnaryServerInterceptor(internal), panics)})
	var header, trailer metadata.MD
	_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	assert.Empty(t, header.Get(grpclimit.MetadataRateLimit), "Trailers-Only")
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, trailer.Get(grpclimit.MetadataRateLimit))
}

// TestPanickingLimitFailsTheCallAndKeepsNothing: under a rule of two limits
// whose second panics in its Take (its own clock, given by a factory), the
// interceptor answers INTERNAL and the server goes on, but the first limit
// kept the call it had taken: every such call spent a request the client
// never got. Now the call fails and counts nowhere.
func TestPanickingLimitFailsTheCallAndKeepsNothing(t *testing.T) {
	var clock limitertest.PanicClock
	first, second := cfg(hotlimit.TokenBucket, 3, time.Minute), cfg(hotlimit.FixedWindow, 5, time.Minute)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c == second {
			opts = append(opts, hotlimit.WithClock(clock.Read))
		}
		return service.NewLimiter(c, opts...)
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{first, second}},
		hotlimit.WithClock(clock.Now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	ts := &testService{}
	client := testgrpc.NewTestServiceClient(serveTCP(t, ts, []grpc.ServerOption{grpc.UnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))}))

	clock.Arm(true)
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	clock.Arm(false)

	require.Zero(t, ts.unary.Load(), "the call was not served")
	served := 0
	for range 5 {
		if _, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}); err == nil {
			served++
		}
	}
	assert.Equal(t, 3, served, "the first limit passes its whole quota")
}
