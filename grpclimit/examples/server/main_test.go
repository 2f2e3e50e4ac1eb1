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

// TestShutdownEndsOpenStreams cancels serve's context while a client holds a
// bidirectional stream open: the server must stop once the grace period is
// over, ending the stream, instead of waiting for the client forever.
func TestShutdownEndsOpenStreams(t *testing.T) {
	srv, err := newServer(config{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, srv, ln, 10*time.Millisecond) }()

	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	stream, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(context.Background())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&testgrpc.StreamingOutputCallRequest{ResponseParameters: []*testgrpc.ResponseParameters{{Size: 1}}}))
	_, err = stream.Recv() // the stream is open on the server
	require.NoError(t, err)

	cancel() // SIGINT
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		srv.Stop()
		t.Fatal("serve did not return while a stream was open")
	}
	_, err = stream.Recv()
	assert.Error(t, err, "the open stream ended with the server")
}

// TestShutdownReturnsWhenIdle checks the graceful half: with no call in
// flight, serve returns without waiting out its (hour-long) grace period.
func TestShutdownReturnsWhenIdle(t *testing.T) {
	srv, err := newServer(config{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, srv, ln, time.Hour) }()

	cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	_, err = testgrpc.NewTestServiceClient(cc).EmptyCall(context.Background(), &testgrpc.Empty{})
	require.NoError(t, err)

	cancel()
	select {
	case err := <-served:
		assert.NoError(t, err)
	case <-time.After(30 * time.Second):
		srv.Stop()
		t.Fatal("serve did not return with no call in flight")
	}
}
