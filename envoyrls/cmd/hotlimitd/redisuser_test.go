package main

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/redis/go-redis/v9"
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
	addr := startRedisWithUser(t)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}

	srv := startServer(t, append(args, "-redis-user", "limiter", "-redis-password", "limiterpw"), io.Discard)
	countsOneAndStops(t, srv)

	var logs bytes.Buffer
	err := run(context.Background(), append(args, "-redis-password", "limiterpw"), &logs, nil)
	require.Error(t, err, "the user's password is not the default user's")
	assert.Contains(t, err.Error(), "-redis-user")

	err = run(context.Background(), append(args, "-redis-user", "limiter"), io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis-user limiter: give its password")
}

// TestRedisUserWithoutScripts: an ACL user that may not run scripts
// (-@scripting) answers PING, but every decision would fail; hotlimitd ends
// at start, saying what the user lacks, rather than serve an error to every
// request. Once it may, hotlimitd starts with the scripts loaded: its first
// request is one EVALSHA, Redis holding the script already.
func TestRedisUserWithoutScripts(t *testing.T) {
	addr := startRedisWithUser(t, "-@scripting")
	dir := t.TempDir()
	writeRule(t, dir, "1")
	args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-user", "limiter", "-redis-password", "limiterpw",
		"-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := run(ctx, args, io.Discard, func(string, string) { t.Error("served"); cancel() })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "+@scripting")
	assert.Contains(t, err.Error(), "NOPERM")

	admin := redis.NewClient(&redis.Options{Addr: addr, Password: "s3cret"})
	defer admin.Close()
	require.NoError(t, admin.Do(context.Background(), "ACL", "SETUSER", "limiter", "+@scripting").Err())
	require.NoError(t, admin.ScriptFlush(context.Background()).Err())
	srv := startServer(t, args, io.Discard)
	require.NoError(t, admin.ConfigResetStat(context.Background()).Err())
	countsOneAndStops(t, srv)
	stats, err := admin.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	assert.Contains(t, stats, "cmdstat_evalsha:calls=2,", "each request one EVALSHA")
	assert.NotContains(t, stats, "cmdstat_eval:", "no script sent with a request")
}

// startRedisWithUser starts a redis-server whose default user's password is
// s3cret, with an ACL user "limiter" (password limiterpw) of every command
// and key, less those perms take away (such as "-@scripting"); it returns
// its address.
func startRedisWithUser(t *testing.T, perms ...string) string {
	t.Helper()
	addr, _, err := redisproc.Start(t, redisproc.Config{
		Password: "s3cret",
		Args: func(port int) []string {
			return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--requirepass", "s3cret", "--user", "limiter", "on", ">limiterpw", "~*", "&*", "+@all"}, perms...)
		},
	})
	require.NoError(t, err)
	return addr
}
