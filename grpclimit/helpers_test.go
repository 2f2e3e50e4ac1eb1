package grpclimit_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

const (
	unaryCall  = "/grpc.testing.TestService/UnaryCall"
	emptyCall  = "/grpc.testing.TestService/EmptyCall"
	inputCall  = "/grpc.testing.TestService/StreamingInputCall"
	duplexCall = "/grpc.testing.TestService/FullDuplexCall"
	outputCall = "/grpc.testing.TestService/StreamingOutputCall"
)

func cfg(a hotlimit.Algorithm, limit int, window time.Duration) hotlimit.Config {
	return hotlimit.Config{Algorithm: a, Limit: limit, Window: window}
}

// newService returns a service with default policy def on a fake clock that
// starts at start.
func newService(t testing.TB, def hotlimit.Config, start time.Duration, opts ...hotlimit.Option) (*service.Service, *atomic.Int64) {
	t.Helper()
	var now atomic.Int64
	now.Store(int64(start))
	svc, err := service.New(def, append([]hotlimit.Option{hotlimit.WithClock(now.Load)}, opts...)...)
	require.NoError(t, err)
	return svc, &now
}

// testService counts what reaches it.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
	unary    atomic.Int32
	received atomic.Int32 // stream messages received by handlers
}

func (s *testService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (s *testService) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	s.unary.Add(1)
	return &testgrpc.SimpleResponse{Username: "ok"}, nil
}

func (s *testService) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	var n int32
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: n})
		}
		if err != nil {
			return err
		}
		n++
		s.received.Add(1)
	}
}

func (s *testService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	for {
		_, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		s.received.Add(1)
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{}); err != nil {
			return err
		}
	}
}

// serveTCP serves ts with the server options on a loopback TCP port and
// returns a client connection to it with the dial options.
func serveTCP(t testing.TB, ts *testService, sopts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	return serve(t, ln, ln.Addr().String(), nil, ts, sopts, dopts)
}

// serveBufconn is serveTCP over an in-memory bufconn listener.
func serveBufconn(t testing.TB, ts *testService, sopts []grpc.ServerOption, dopts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	ln := bufconn.Listen(1 << 20)
	dial := func(ctx context.Context, _ string) (net.Conn, error) { return ln.DialContext(ctx) }
	return serve(t, ln, "passthrough:///bufnet", dial, ts, sopts, dopts)
}

func serve(t testing.TB, ln net.Listener, target string, dial func(context.Context, string) (net.Conn, error),
	ts *testService, sopts []grpc.ServerOption, dopts []grpc.DialOption) *grpc.ClientConn {
	srv := grpc.NewServer(sopts...)
	testgrpc.RegisterTestServiceServer(srv, ts)
	registerHealth(srv)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	dopts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dopts...)
	if dial != nil {
		dopts = append(dopts, grpc.WithContextDialer(dial))
	}
	cc, err := grpc.NewClient(target, dopts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// ctx returns a context that ends with the test, and at most in 30 s.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// StreamingOutputCall is a server-streaming call: the client sends one
// message, the handler answers with one.
func (s *testService) StreamingOutputCall(_ *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	s.received.Add(1)
	return stream.Send(&testgrpc.StreamingOutputCallResponse{})
}
