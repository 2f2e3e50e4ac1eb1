package main

import (
	"context"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisAwaitedAtStart: a Redis not yet listening when hotlimitd starts
// (both started at once, by Compose or in one pod) is waited for within the
// check's 10 s, each refused dial a line of the log, rather than ending
// hotlimitd once go-redis has given up on its first PING.
func TestRedisAwaitedAtStart(t *testing.T) {
	bin := redisproc.Require(t)
	sock := filepath.Join(t.TempDir(), "redis.sock")
	dir := t.TempDir()
	writeRule(t, dir, "1")
	var logs redisproc.SyncBuffer
	stop, started := make(chan struct{}), make(chan *exec.Cmd, 1)
	t.Cleanup(func() {
		close(stop)
		if cmd := <-started; cmd != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	// Redis starts once hotlimitd has been refused as often as go-redis's
	// pool dials (its default PoolSize, 10 per GOMAXPROCS) before it
	// answers every command with the last refusal, without dialing and
	// without a line of the log, until a probe of its own, once a second,
	// connects; that is more than go-redis tries a command (MaxRetries 3).
	// The check must wait for Redis through both. Past 40 (GOMAXPROCS 5
	// and more) the refusals would outlast the check's 10 s: Redis then
	// starts after 40, still past a command's tries.
	refusals := min(10*runtime.GOMAXPROCS(0), 40)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), `"msg":"redis client"`) < refusals; time.Sleep(5 * time.Millisecond) { // polling, with a deadline
			select {
			case <-stop:
				started <- nil
				return
			default:
			}
			if time.Now().After(deadline) {
				started <- nil
				return
			}
		}
		cmd := exec.Command(bin, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no")
		cmd.SysProcAttr = childproc.Attr()
		if cmd.Start() != nil {
			cmd = nil
		}
		started <- cmd
	}()
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", sock, "-redis-timeout", "10s"}, &logs)
	assert.Contains(t, logs.String(), "connect: no such file or directory", "the refusal logged")
	srv.stop(t)
}

// TestRedisLateAndSilentAtStart: a Redis refused at first, then listening
// but answering nothing until the check's time is up, ends hotlimitd with
// the PING unanswered as the reason, not with the refusal of before it,
// which would send the operator to look for a Redis that is in fact up.
func TestRedisLateAndSilentAtStart(t *testing.T) {
	defer func(d time.Duration) { redisStartup = d }(redisStartup)
	redisStartup = 2 * time.Second // ample for six refusals and a listen
	sock := filepath.Join(t.TempDir(), "redis.sock")
	dir := t.TempDir()
	writeRule(t, dir, "1")
	var logs redisproc.SyncBuffer
	listening := make(chan net.Listener, 1)
	go func() {
		// Listens once the client has been refused six times, past the
		// four dials of the first PING (MaxRetries 3), then reads what
		// it is sent and answers nothing.
		for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), `"msg":"redis client"`) < 6 && time.Now().Before(deadline); time.Sleep(time.Millisecond) { // polling, with a deadline
		}
		ln, err := net.Listen("unix", sock)
		listening <- ln
		for err == nil {
			var c net.Conn
			if c, err = ln.Accept(); err == nil {
				go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
			}
		}
	}()
	err := run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", sock}, &logs, func(string, string) { t.Error("served") })
	ln := <-listening
	require.NotNil(t, ln, "listening")
	_ = ln.Close()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no answer to PING", "not the refusal of before")
	assert.Contains(t, logs.String(), "connect: no such file or directory", "refused first")
}

// TestRedisSilentPastTheClientsTimeoutAtStart: a Redis that listens from
// the start but answers nothing, for longer than the client's own deadline
// on a new connection's handshake (its 5 s dial timeout), is asked again
// until the check's time is up and then told as one that does not answer
// (is it TLS?), not ended at the client's deadline with a bare "i/o
// timeout", which at the default 10 s every silent Redis was.
func TestRedisSilentPastTheClientsTimeoutAtStart(t *testing.T) {
	defer func(d time.Duration) { redisStartup = d }(redisStartup)
	redisStartup = 6 * time.Second // past the client's 5 s
	sock := filepath.Join(t.TempDir(), "redis.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); _ = c.Close() }()
		}
	}()
	dir := t.TempDir()
	writeRule(t, dir, "1")
	start := time.Now()
	err = run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", sock}, &redisproc.SyncBuffer{}, func(string, string) { t.Error("served") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis "+sock+": no answer to PING within 6s (is it TLS? see -redis-tls)")
	assert.GreaterOrEqual(t, time.Since(start), redisStartup, "the check's whole time")
}
