package grpclimit_test

import (
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
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

// relay is a service whose UnaryCall calls next's EmptyCall in its own
// context, as a handler calling another service does.
type relay struct {
	testgrpc.UnimplementedTestServiceServer
	next testgrpc.TestServiceClient
}

func (r *relay) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if _, err := r.next.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{}, nil
}

// TestMiddlewareLimiterUnderClientInterceptorsSeesNoCallSent: as its doc
// says, MiddlewareLimiter under go-grpc-middleware's client interceptors is
// never told which call is sent. In a handler's context it finds the call
// being served: a relay's calls of EmptyCall are limited under the relay's
// own method and its caller's key, and their RateLimit metadata and
// pushback reach the relay's caller. In a client's own context it finds no
// method: every call is limited under the empty API.
func TestMiddlewareLimiterUnderClientInterceptorsSeesNoCallSent(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	var rec recorder
	lim := grpclimit.MiddlewareLimiter(svc, grpclimit.WithObserver(rec.observe))
	backend := serveBufconn(t, &testService{}, nil, grpc.WithUnaryInterceptor(ratelimit.UnaryClientInterceptor(lim)))

	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, &relay{next: testgrpc.NewTestServiceClient(backend)})
	ln := bufconn.Listen(1 << 20)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	front, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }))
	require.NoError(t, err)
	t.Cleanup(func() { _ = front.Close() })

	var header, trailer metadata.MD
	_, err = testgrpc.NewTestServiceClient(front).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
	require.NoError(t, err)
	e := rec.last()
	assert.Equal(t, unaryCall, e.API, "the relay's own method, not EmptyCall")
	assert.Equal(t, "peer:bufconn", e.User, "the relay's caller")
	assert.Equal(t, []string{`"fixedwindow-1-1s";q=1;w=1`}, header.Get(grpclimit.MetadataPolicy), "the relay's caller gets the fields")

	_, err = testgrpc.NewTestServiceClient(front).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "the relay failed with the denial")
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback), "and its caller got the pushback")

	_, err = testgrpc.NewTestServiceClient(backend).EmptyCall(ctx(t), &testgrpc.Empty{})
	require.NoError(t, err)
	assert.Empty(t, rec.last().API, "a client's own context names no method")
}

// TestMiddlewareLimiterCommitsTheCallsItPasses pins what MiddlewareLimiter's
// doc says of a call it lets through: its RateLimit metadata are set as
// headers before the handler runs, so a failure of the handler is no longer
// Trailers-Only, and a client's retry policy does not retry it (gRFC A6),
// where UnaryServerInterceptor's failure is retried, and so is
// MiddlewareLimiter's without the metadata.
func TestMiddlewareLimiterCommitsTheCallsItPasses(t *testing.T) {
	const serviceConfig = `{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`
	for _, tc := range []struct {
		name    string
		limit   func(svc *service.Service) grpc.UnaryServerInterceptor
		retried bool
	}{
		{"middleware", func(svc *service.Service) grpc.UnaryServerInterceptor {
			return ratelimit.UnaryServerInterceptor(grpclimit.MiddlewareLimiter(svc))
		}, false},
		{"middleware-noheaders", func(svc *service.Service) grpc.UnaryServerInterceptor {
			return ratelimit.UnaryServerInterceptor(grpclimit.MiddlewareLimiter(svc, grpclimit.WithRateLimitHeaders(false)))
		}, true},
		{"interceptor", func(svc *service.Service) grpc.UnaryServerInterceptor {
			return grpclimit.UnaryServerInterceptor(svc)
		}, true},
	} {
		svc, _ := newService(t, cfg(hotlimit.FixedWindow, 10, time.Minute), 0)
		var calls atomic.Int32
		cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(tc.limit(svc), failFirst(&calls))},
			grpc.WithDefaultServiceConfig(serviceConfig))
		var header metadata.MD
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header))
		if tc.retried {
			require.NoError(t, err, "%s: the failure is retried", tc.name)
			assert.EqualValues(t, 2, calls.Load(), tc.name)
			continue
		}
		assert.Equal(t, codes.Unavailable, status.Code(err), "%s: the failure is not retried", tc.name)
		assert.EqualValues(t, 1, calls.Load(), tc.name)
		assert.Equal(t, []string{`"fixedwindow-10-1m";r=9;t=60`}, header.Get("ratelimit"), "%s: the failure's headers carry the fields", tc.name)
	}
}
