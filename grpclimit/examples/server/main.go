// Command server is a gRPC server rate-limited by hotlimit's grpclimit
// interceptors, to try from a terminal with any stock client. It serves
// grpc.testing.TestService (the interop test service), grpc.health.v1 and
// server reflection, so grpcurl needs no .proto files:
//
//	cd grpclimit && go run ./examples/server -addr 127.0.0.1:9090
//	grpcurl -plaintext 127.0.0.1:9090 grpc.testing.TestService/UnaryCall # 5/s per client (token bucket)
//	grpcurl -plaintext 127.0.0.1:9090 grpc.testing.TestService/EmptyCall # 3/s per client and method (fixed window)
//	grpcurl -plaintext 127.0.0.1:9090 grpc.health.v1.Health/Check        # never limited
//
// The user is the peer's IP address (IPv6 by /64); the API the full method.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// config is what main varies and tests fix.
type config struct {
	clock   hotlimit.Clock        // nil: the process's monotonic clock
	observe func(grpclimit.Event) // nil: no observer
	grace   time.Duration         // 0: defaultGrace
}

// defaultGrace is how long a shutdown waits for the calls in flight to end
// before it cancels them: a client holding a stream open must not keep the
// process alive.
const defaultGrace = 5 * time.Second

// The rules: a default per (peer, method) and an override for UnaryCall.
var (
	defaultPolicy = hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}
	unaryPolicy   = hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
)

const unaryCall = "/grpc.testing.TestService/UnaryCall"

// newServer returns the example's server: the test service, health and
// reflection, behind the rate limiter (health and reflection exempt).
func newServer(c config) (*grpc.Server, error) {
	svc, err := service.New(defaultPolicy, hotlimit.WithClock(c.clock), hotlimit.WithAutoSweep(10000))
	if err != nil {
		return nil, err
	}
	if err := svc.ConfigureAPI(unaryCall, unaryPolicy); err != nil {
		return nil, err
	}
	opts := []grpclimit.Option{grpclimit.WithObserver(c.observe)} // user: the peer IP; API: the full method
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, opts...)),
		grpc.ChainStreamInterceptor(grpclimit.StreamServerInterceptor(svc, opts...)),
	)
	testgrpc.RegisterTestServiceServer(srv, testService{})
	healthpb.RegisterHealthServer(srv, health.NewServer())
	reflection.Register(srv)
	return srv, nil
}

// testService answers the interop test service's calls.
type testService struct {
	testgrpc.UnimplementedTestServiceServer
}

func (testService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return &testgrpc.Empty{}, nil
}

func (testService) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Payload: payload(req.GetResponseSize())}, nil
}

func (testService) StreamingOutputCall(req *testgrpc.StreamingOutputCallRequest, stream grpc.ServerStreamingServer[testgrpc.StreamingOutputCallResponse]) error {
	for _, p := range req.GetResponseParameters() {
		if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: payload(p.GetSize())}); err != nil {
			return err
		}
	}
	return nil
}

func (testService) StreamingInputCall(stream grpc.ClientStreamingServer[testgrpc.StreamingInputCallRequest, testgrpc.StreamingInputCallResponse]) error {
	var size int32
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&testgrpc.StreamingInputCallResponse{AggregatedPayloadSize: size})
		}
		if err != nil {
			return err
		}
		size += int32(len(req.GetPayload().GetBody()))
	}
}

func (testService) FullDuplexCall(stream grpc.BidiStreamingServer[testgrpc.StreamingOutputCallRequest, testgrpc.StreamingOutputCallResponse]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, p := range req.GetResponseParameters() {
			if err := stream.Send(&testgrpc.StreamingOutputCallResponse{Payload: payload(p.GetSize())}); err != nil {
				return err
			}
		}
	}
}

// payload returns a payload of size bytes (none for a negative size), at
// most 1 MiB.
func payload(size int32) *testgrpc.Payload {
	return &testgrpc.Payload{Body: make([]byte, min(max(size, 0), 1<<20))}
}

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "address to listen on")
	verbose := flag.Bool("v", false, "log every decision")
	flag.Parse()
	c := config{}
	if *verbose {
		c.observe = func(e grpclimit.Event) {
			log.Printf("user=%q api=%q policy=%s allowed=%v remaining=%d", e.User, e.API, e.Policy, e.Decision.Allowed, e.Decision.Remaining)
			if e.Err != nil {
				// A limiter that could not decide (or the request's own
				// end): the client is told no more than that the limiter
				// is unavailable, or nothing when a failure policy lets
				// the request through, so the cause is logged here.
				log.Printf("user=%q api=%q: %v", e.User, e.API, e.Err)
			}
		}
	}
	if err := run(*addr, c); err != nil {
		log.Fatal(err)
	}
}

// run serves until SIGINT or SIGTERM, then stops gracefully.
func run(addr string, c config) error {
	srv, err := newServer(c)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Printf("hotlimit gRPC example listening on %s\n", ln.Addr())
	fmt.Println("  default                               fixed window 3/s per client IP and method")
	fmt.Println("  grpc.testing.TestService/UnaryCall    token bucket 5/s per client IP")
	fmt.Println("  grpc.health.v1.Health, reflection     not limited")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, srv, ln, c.grace)
}

// serve serves on ln until ctx is done, then stops accepting calls and waits
// up to grace (0: defaultGrace) for those in flight before cancelling them.
func serve(ctx context.Context, srv *grpc.Server, ln net.Listener, grace time.Duration) error {
	if grace <= 0 {
		grace = defaultGrace
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop() // returns once every call has ended
		close(stopped)
	}()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		srv.Stop() // cancels the calls still running; GracefulStop then returns
		<-stopped
	}
	return <-errc
}
