package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisUser: a Redis whose access is by ACL user (Redis 6 or later), as
// the reference reaches with REDIS_AUTH=user:password, is reached with
// -redis-user and -redis-password, and decides there; the user's password
// alone, as the default user's, is refused at start; and -redis-user
// without -redis-password, which would connect as the default user, is an
// error of the flags.
func TestRedisUser(t *testing.T) {
	addr, _, err := redisproc.Start(t, redisproc.Config{
		Password: "s3cret",
		Args: func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--requirepass", "s3cret", "--user", "limiter", "on", ">limiterpw", "~*", "&*", "+@all"}
		},
	})
	require.NoError(t, err)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}

	srv := startServer(t, append(args, "-redis-user", "limiter", "-redis-password", "limiterpw"), io.Discard)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	for i, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, want, resp.OverallCode, "call %d: counted in Redis", i)
	}
	srv.stop(t)

	var logs bytes.Buffer
	err = run(context.Background(), append(args, "-redis-password", "limiterpw"), &logs, nil)
	require.Error(t, err, "the user's password is not the default user's")
	assert.Contains(t, err.Error(), "-redis-user")

	err = run(context.Background(), append(args, "-redis-user", "limiter"), io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis-user limiter: give its password")
}
