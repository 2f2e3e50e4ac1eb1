package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
)

// TestRedisAwaitedAtStart: a Redis not yet listening when hotlimitd starts
// (both started at once, by Compose or in one pod) is waited for within the
// check's 10 s, each refused dial a line of the log, rather than ending
// hotlimitd once go-redis has given up on its first PING.
func TestRedisAwaitedAtStart(t *testing.T) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server is required in CI: %v", err)
		}
		t.Skipf("redis-server not installed: %v", err)
	}
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
	go func() {
		// Redis starts once hotlimitd has been refused 20 times: more
		// than go-redis tries a command (MaxRetries 3), and, with
		// GOMAXPROCS 2, as often as its pool dials (PoolSize) before it
		// answers every command with the last refusal, without dialing,
		// until a probe of its own, once a second, connects. The check
		// must wait for Redis through both.
		for deadline := time.Now().Add(10 * time.Second); strings.Count(logs.String(), `"msg":"redis client"`) < 20; time.Sleep(5 * time.Millisecond) { // polling, with a deadline
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
		if cmd.Start() != nil {
			cmd = nil
		}
		started <- cmd
	}()
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", sock, "-redis-timeout", "10s"}, &logs)
	assert.Contains(t, logs.String(), "connect: no such file or directory", "the refusal logged")
	srv.stop(t)
}
