package main

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// breakingListener accepts as its listener does until breakNow, after which
// Accept fails with an error that is not net.ErrClosed, as when the socket
// is taken away from under the server.
type breakingListener struct {
	net.Listener
	broken atomic.Bool
}

func (l *breakingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil && l.broken.Load() {
		return nil, errors.New("accept: the socket is gone")
	}
	return c, err
}

func (l *breakingListener) breakNow() {
	l.broken.Store(true)
	_ = l.Listener.Close()
}

// TestGRPCFailureGivesLeasesBack: when the gRPC server fails and run
// returns its error, what the limiters took ahead of Redis (-redis-lease) is
// given back, as on a drain: otherwise it stays spent in Redis for the
// other replicas until its window ends.
func TestGRPCFailureGivesLeasesBack(t *testing.T) {
	addr, _ := startRedis(t, "")
	dir := t.TempDir()
	writeRule(t, dir, "3")
	prefix := t.Name() + ":"
	call := func(conn *grpc.ClientConn) pb.RateLimitResponse_Code {
		resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "a"}},
		}}})
		require.NoError(t, err)
		return resp.OverallCode
	}

	lis := breakableListen(t)
	done := make(chan error, 1)
	grpcAddr := make(chan string, 1)
	go func() {
		done <- run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr,
			"-redis-lease", "2", "-redis-lease-ttl", "1h", "-redis-prefix", prefix, "-redis-timeout", "10s"},
			io.Discard, func(g, _ string) { grpcAddr <- g })
	}()
	var g string
	select {
	case g = <-grpcAddr:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	conn, err := grpc.NewClient(g, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.Equal(t, pb.RateLimitResponse_OK, call(conn), "takes a lease of 2 and spends 1")
	(<-lis).breakNow()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "grpc server: accept: the socket is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return on the gRPC server's failure")
	}

	next := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", prefix, "-redis-timeout", "10s"}, io.Discard)
	passed := 0
	for range 3 {
		if call(next.conn) == pb.RateLimitResponse_OK {
			passed++
		}
	}
	assert.Equal(t, 2, passed, "3 an hour, less the one request the failed process answered")
	next.stop(t)
}
