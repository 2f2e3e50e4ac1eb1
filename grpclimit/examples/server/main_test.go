package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// start serves newServer(c) on a loopback port and returns a client
// connection to it.
func start(t *testing.T, c config) *grpc.ClientConn {
	t.Helper()
	srv, err := newServer(c)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func retryDelay(t *testing.T, err error) time.Duration {
	t.Helper()
	for _, d := range status.Convert(err).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			return ri.GetRetryDelay().AsDuration()
		}
	}
	t.Fatalf("no RetryInfo in %v", err)
	return 0
}

// TestExampleServer runs the example's rules with a frozen clock: exactly
// the limit of each method passes, the next call is denied with the wait the
// policy implies, and health checks are never limited.
func TestExampleServer(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(1000*time.Second + 250*time.Millisecond)) // 750 ms left in the fixed window
	cc := start(t, config{clock: now.Load})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := testgrpc.NewTestServiceClient(cc)

	// UnaryCall: token bucket 5/s, so 5 pass and a token is 200 ms away.
	var codesGot []codes.Code
	var header metadata.MD
	for range 6 {
		resp, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: 3}, grpc.Header(&header))
		codesGot = append(codesGot, status.Code(err))
		if err == nil {
			assert.Len(t, resp.GetPayload().GetBody(), 3)
			assert.Equal(t, []string{`"tokenbucket-5-1s";q=5;w=1`}, header.Get("ratelimit-policy"))
		} else {
			assert.Equal(t, 200*time.Millisecond, retryDelay(t, err))
		}
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.OK, codes.OK, codes.OK, codes.ResourceExhausted}, codesGot)

	// EmptyCall: the default, fixed window 3/s per (peer, method).
	codesGot = nil
	for range 4 {
		_, err := client.EmptyCall(ctx, &testgrpc.Empty{})
		codesGot = append(codesGot, status.Code(err))
		if err != nil {
			assert.Equal(t, 750*time.Millisecond, retryDelay(t, err))
		}
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.OK, codes.ResourceExhausted}, codesGot)

	// A stream is one call of its method.
	for i := range 4 {
		stream, err := client.FullDuplexCall(ctx)
		require.NoError(t, err)
		err = stream.Send(&testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{Size: 2}}})
		if i == 3 && errors.Is(err, io.EOF) {
			err = nil // the server ended the denied stream first: Recv has its status
		}
		require.NoError(t, err, "stream %d", i)
		resp, err := stream.Recv()
		if i < 3 {
			require.NoError(t, err, "stream %d", i)
			assert.Len(t, resp.GetPayload().GetBody(), 2)
		} else {
			assert.Equal(t, codes.ResourceExhausted, status.Code(err), "stream %d", i)
		}
		_ = stream.CloseSend()
	}

	// Health is exempt.
	health := healthpb.NewHealthClient(cc)
	for range 10 {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	}

	// A second later everything passes again.
	now.Add(int64(time.Second))
	_, err := client.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	assert.NoError(t, err)
	_, err = client.EmptyCall(ctx, &testgrpc.Empty{})
	assert.NoError(t, err)
}
