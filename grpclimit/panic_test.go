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
