package grpclimit_test

import (
	"context"
	"strings"
	"sync/atomic"
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
)

// failFirst is an interceptor after the limit that fails the first call with
// UNAVAILABLE, as a handler whose backend blipped does.
func failFirst(calls *atomic.Int32) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if calls.Add(1) == 1 {
			return nil, status.Error(codes.Unavailable, "backend blip")
		}
		return handler(ctx, req)
	}
}

// TestHandlerFailureBehindTheLimitStaysRetryable: a call the limit lets
// through fails in the handler with UNAVAILABLE, which the client's retry
// policy retries. Retrying needs a Trailers-Only response: a client that
// has received headers has committed the call (gRFC A6). The limit's
// RateLimit metadata must therefore not be sent as headers of a failure:
// the failed attempt carries it in its trailers, and the retry passes.
func TestHandlerFailureBehindTheLimitStaysRetryable(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	var calls atomic.Int32
	const serviceConfig = `{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc), failFirst(&calls))},
		grpc.WithDefaultServiceConfig(serviceConfig))
	client := testgrpc.NewTestServiceClient(cc)

	var header metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
	require.NoError(t, err, "the failed attempt is retried")
	assert.EqualValues(t, 2, calls.Load(), "two attempts reached the server")
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=8;t=60`}, header.Get("ratelimit"), "the passing attempt's headers carry its fields")

	// Without a retry policy, the failure's fields are in its trailers.
	calls.Store(0)
	plain := testgrpc.NewTestServiceClient(serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc), failFirst(&calls))}))
	var trailer metadata.MD
	header = nil
	_, err = plain.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.Unavailable, status.Code(err))
	assert.Empty(t, header, "a failure is Trailers-Only")
	assert.Equal(t, []string{`"fixedwindow-10-1m";q=10;w=60`}, trailer.Get("ratelimit-policy"))
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=7;t=60`}, trailer.Get("ratelimit"))
}

// TestDenialByAnInnerLimitStaysRetryable chains two limits, a generous one
// per client and a strict one per method, as a server with a global and a
// per-route quota does. When the outer passes a call and the inner denies
// it, the denial must stay Trailers-Only, so that the client can retry it
// after the pushback; both limits' fields are in its trailers.
func TestDenialByAnInnerLimitStaysRetryable(t *testing.T) {
	outer, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), 0)
	inner, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(outer), grpclimit.UnaryServerInterceptor(inner))})
	client := testgrpc.NewTestServiceClient(cc)

	var header metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
	require.NoError(t, err)
	assert.Equal(t, []string{`"fixedwindow-1-1m";r=0;t=60`, `"fixedwindow-100-1m";r=99;t=60`}, header.Get("ratelimit"),
		"a pass carries both items, the inner's first")

	var trailer metadata.MD
	header = nil
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Empty(t, header, "the inner denial is Trailers-Only, so a retry policy can retry it")
	assert.Equal(t, []string{"60000"}, trailer.Get("grpc-retry-pushback-ms"))
	assert.Equal(t, []string{`"fixedwindow-1-1m";r=0;t=60`, `"fixedwindow-100-1m";r=98;t=60`}, trailer.Get("ratelimit"))
}

// TestStreamFailureBeforeItsFirstMessageIsTrailersOnly: a stream the limit
// lets through fails before it sends anything (here, a stream interceptor
// after the limit refuses it). The response must be Trailers-Only, with the
// limit's fields in its trailers; a stream that sends gets them in its
// headers.
func TestStreamFailureBeforeItsFirstMessageIsTrailersOnly(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	var refused atomic.Bool
	refuse := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if refused.CompareAndSwap(false, true) {
			return status.Error(codes.Unavailable, "not now")
		}
		return handler(srv, ss)
	}
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc), refuse)})
	client := testgrpc.NewTestServiceClient(cc)

	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	header, _ := stream.Header()
	assert.Empty(t, header.Get("ratelimit"), "no headers before a failure")
	assert.Empty(t, header.Get("content-type"), "the response is Trailers-Only")
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, stream.Trailer().Get("ratelimit"))

	stream, err = client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, stream.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = stream.Recv()
	require.NoError(t, err)
	header, err = stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=8;t=60`}, header.Get("ratelimit"))
	require.NoError(t, stream.CloseSend())
}

// sendHeaderFirst is a stream interceptor after the limit whose handler
// sends its own headers through the context, around the stream's wrapper.
func sendHeaderFirst(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := grpc.SendHeader(ss.Context(), metadata.Pairs("x-own", "1")); err != nil {
		return err
	}
	return handler(srv, ss)
}

// TestStreamHeadersSentAroundTheLimitKeepItsFields: when the headers leave
// before the limit could add its fields to them, the fields go in the
// trailers rather than being lost.
func TestStreamHeadersSentAroundTheLimitKeepItsFields(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainStreamInterceptor(
		grpclimit.StreamServerInterceptor(svc), sendHeaderFirst)})
	client := testgrpc.NewTestServiceClient(cc)
	stream, err := client.FullDuplexCall(ctx(t))
	require.NoError(t, err)
	require.NoError(t, stream.Send(&testgrpc.StreamingOutputCallRequest{}))
	_, err = stream.Recv()
	require.NoError(t, err)
	header, err := stream.Header()
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, header.Get("x-own"))
	require.NoError(t, stream.CloseSend())
	_, err = stream.Recv()
	require.Error(t, err) // io.EOF: the stream ended
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, stream.Trailer().Get("ratelimit"), "the fields are in the trailers")
}

// TestUnaryHeadersSentByTheHandlerKeepTheLimitsFields: a handler that sends
// its headers itself has sent them before the limit adds its fields, which
// then go in the trailers.
func TestUnaryHeadersSentByTheHandlerKeepTheLimitsFields(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
	sendFirst := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := grpc.SendHeader(ctx, metadata.Pairs("x-own", "1")); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc), sendFirst)})
	var header, trailer metadata.MD
	_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.NoError(t, err)
	assert.Equal(t, []string{"1"}, header.Get("x-own"))
	assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, trailer.Get("ratelimit"))
}

// TestLongMetadataValueKeyIsBounded: a metadata value past 256 bytes is
// keyed by its digest, as httplimit keys a header, so that a caller sending
// huge values cannot make each key pin that much memory; MetadataKey names
// the same key for rules.
func TestLongMetadataValueKeyIsBounded(t *testing.T) {
	long := strings.Repeat("k", 64<<10)
	for _, f := range []grpclimit.KeyFunc{grpclimit.Metadata("X-API-Key"), grpclimit.OutgoingMetadata("X-API-Key")} {
		c := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", long))
		c = metadata.NewOutgoingContext(c, metadata.Pairs("x-api-key", long))
		key, found := f(c, unaryCall, nil)
		assert.True(t, found)
		assert.LessOrEqual(t, len(key), 128)
		assert.Equal(t, grpclimit.MetadataKey("x-api-key", long), key)
		assert.True(t, strings.HasPrefix(key, "header-sha256:x-api-key:"), key)
	}
	short := strings.Repeat("k", 256)
	assert.Equal(t, "header:x-api-key:"+short, grpclimit.MetadataKey("x-api-key", short))
}
