package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

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
	countsOneAndStops(t, srv)

	var logs bytes.Buffer
	err = run(context.Background(), append(args, "-redis-password", "limiterpw"), &logs, nil)
	require.Error(t, err, "the user's password is not the default user's")
	assert.Contains(t, err.Error(), "-redis-user")

	err = run(context.Background(), append(args, "-redis-user", "limiter"), io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis-user limiter: give its password")
}
