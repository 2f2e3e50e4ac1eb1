package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisClusterNodeWithoutTheFlag: the address of one node of a Redis
// Cluster without -redis-cluster ends hotlimitd at start, naming the flag,
// rather than a start whose client sends every key to that node, where
// those of the other nodes' slots get MOVED and are answered as failures.
func TestRedisClusterNodeWithoutTheFlag(t *testing.T) {
	addr := startClusterNode(t)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	// Were the node taken for a plain Redis, hotlimitd would serve until
	// the context ends, and return no error.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr}, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis "+addr+": Redis is a node of a Redis Cluster")
	assert.Contains(t, err.Error(), "add -redis-cluster")
}

// TestSignalWhileRedisIsAskedForInfoAtStart: a signal that comes while the
// start check waits for Redis's answer to INFO (whether it is a node of a
// cluster) stops hotlimitd at once, before serving, as one that comes while
// it waits for PING does: the client's read ends at its deadline only, and
// a check that asked INFO outside its wait for the signal served once the
// read had timed out, seconds after the signal.
func TestSignalWhileRedisIsAskedForInfoAtStart(t *testing.T) {
	addr, _ := startRedis(t, "")
	asked := make(chan struct{}, 1)
	proxy := startProxy(t, addr, func(_ net.Conn, b []byte, answer bool) bool {
		if answer || !bytes.Contains(bytes.ToLower(b), []byte("\r\ninfo\r\n")) {
			return false
		}
		select {
		case asked <- struct{}{}:
		default:
		}
		return true // never answered
	})
	dir := t.TempDir()
	writeRule(t, dir, "1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", proxy}, io.Discard, func(string, string) { t.Error("served after the signal") })
	}()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("run ended before INFO was asked: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "a stop, not a failure")
	case <-time.After(2 * time.Second): // the read's deadline is the check's 10 s
		t.Fatal("the signal waited for the answer to INFO")
	}
}

// TestRedisUserWithoutInfoIsNoClusterNode: an ACL user that may not run
// INFO (-info), which the start check asks to tell a node of a cluster,
// still starts hotlimitd on a plain Redis and decides there: the refusal is
// taken as no cluster node, not as a Redis that cannot serve.
func TestRedisUserWithoutInfoIsNoClusterNode(t *testing.T) {
	addr := startRedisWithUser(t, "-info")
	var logs redisproc.SyncBuffer
	dir := t.TempDir()
	writeRule(t, dir, "1")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr,
		"-redis-user", "limiter", "-redis-password", "limiterpw", "-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}, &logs)
	countsOneAndStops(t, srv)
	assert.NotContains(t, logs.String(), "not INFO in time", "a refusal is an answer: no warning")
}

// TestRedisOneNodeClusterNeedsTheFlag: a Redis Cluster of one node, which
// holds every slot, would answer a plain client's keys today, but MOVED
// for them once a slot moves to a node added or a replica takes over: its
// address alone ends hotlimitd at start, with a reason that holds for it
// (there are no other nodes yet), and with -redis-cluster, as the error
// says to add, hotlimitd serves and decides there.
func TestRedisOneNodeClusterNeedsTheFlag(t *testing.T) {
	addr := startClusterNode(t)
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	require.NoError(t, admin.Do(context.Background(), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, err := admin.ClusterInfo(context.Background()).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	}, 10*time.Second, 10*time.Millisecond)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}

	err := run(context.Background(), args, io.Discard, func(string, string) { t.Error("served") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis "+addr+": Redis is a node of a Redis Cluster, which answers MOVED for the keys of the slots it does not serve")
	assert.Contains(t, err.Error(), "add -redis-cluster")

	srv := startServer(t, append(args, "-redis-cluster"), io.Discard)
	countsOneAndStops(t, srv)
}

// TestRedisSilentToInfoAtStartIsAWarning: a Redis (or a proxy before it)
// that answers PING and the scripts but not INFO holds the start check for
// its whole time; hotlimitd then serves, as for a Redis that refuses INFO,
// but says in a warning that it could not tell whether Redis is a node of
// a cluster, rather than serve without a word after the wait.
func TestRedisSilentToInfoAtStartIsAWarning(t *testing.T) {
	defer func(d time.Duration) { redisStartup = d }(redisStartup)
	redisStartup = time.Second
	addr, _ := startRedis(t, "")
	proxy := startProxy(t, addr, func(_ net.Conn, b []byte, answer bool) bool {
		return !answer && bytes.Contains(bytes.ToLower(b), []byte("\r\ninfo\r\n")) // never answered
	})
	dir := t.TempDir()
	writeRule(t, dir, "1")
	var logs redisproc.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := false
	err := run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", proxy}, &logs, func(string, string) { served = true; cancel() })
	require.NoError(t, err)
	assert.True(t, served, "a Redis silent to INFO is no cluster node")
	assert.Contains(t, logs.String(), "Redis answered PING, but not INFO in time: whether it is a node of a Redis Cluster is not known; if it is one, add -redis-cluster")
}

// startClusterNode starts a redis-server with cluster mode enabled, a node
// of no cluster yet (no slots unless the test adds them), and returns its
// address.
func startClusterNode(t *testing.T) string {
	t.Helper()
	addr, _, err := redisproc.Start(t, redisproc.Config{
		Bus: true,
		Args: func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf")}
		},
	})
	require.NoError(t, err)
	return addr
}
