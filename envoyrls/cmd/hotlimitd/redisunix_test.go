package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisUnixSocket: -redis takes a Unix socket by its path, as the
// reference's REDIS_SOCKET_TYPE=unix takes it in REDIS_URL, and a unix://
// URL is refused with the path to give instead.
func TestRedisUnixSocket(t *testing.T) {
	bin := redisproc.Require(t)
	sock := filepath.Join(t.TempDir(), "redis.sock")
	cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no")
	cmd.SysProcAttr = childproc.Attr()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	require.Eventually(t, func() bool { _, err := os.Stat(sock); return err == nil }, 10*time.Second, 20*time.Millisecond)
	dir := t.TempDir()
	writeRule(t, dir, "1")

	err := run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", "unix://" + sock}, io.Discard, func(string, string) { t.Error("served") })
	require.Error(t, err)
	assert.ErrorContains(t, err, "-redis "+sock, "the path to give")

	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", sock, "-redis-timeout", "10s"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	var codes []pb.RateLimitResponse_Code
	for range 2 {
		resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
		}}})
		require.NoError(t, err)
		codes = append(codes, resp.OverallCode)
	}
	assert.Equal(t, []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT}, codes, "1 an hour, counted in Redis")
	srv.stop(t)
}
