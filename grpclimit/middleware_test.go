package grpclimit_test

import (
	"io"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
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

func TestMiddlewareLimiter(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Second), 0)
	var rec recorder
	lim := grpclimit.MiddlewareLimiter(svc, grpclimit.WithObserver(rec.observe))
	ts := &testService{}
	cc := serveTCP(t, ts, []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(lim)),
		grpc.ChainStreamInterceptor(ratelimit.StreamServerInterceptor(lim)),
	})
	client := testgrpc.NewTestServiceClient(cc)

	for i := range 2 {
		var header metadata.MD
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, []string{`"fixedwindow-2-1s";q=2;w=1`}, header.Get("ratelimit-policy"), "call %d", i)
		assert.Equal(t, "ip:127.0.0.1", rec.last().User)
		assert.Equal(t, unaryCall, rec.last().API, "the method comes from the context")
	}
	var trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.EqualValues(t, 2, ts.unary.Load())
	assert.Contains(t, status.Convert(err).Message(), `rate limit of policy "fixedwindow-2-1s" (2 requests per 1s) exceeded; retry in 1s`)
	assert.Empty(t, status.Convert(err).Details(), "the middleware drops the details")
	assert.Equal(t, []string{"1000"}, trailer.Get("grpc-retry-pushback-ms"), "the trailer survives it")

	// Streams: limited under their own method, with the same quota rules.
	for range 2 {
		stream, err := client.FullDuplexCall(ctx(t))
		require.NoError(t, err)
		require.NoError(t, stream.CloseSend())
		_, err = stream.Recv()
		require.ErrorIs(t, err, io.EOF)
	}
	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, duplexCall, rec.last().API)
}
