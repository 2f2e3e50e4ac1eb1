package main

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisCheckedAtStart: a Redis that cannot be reached, that refuses the
// password or that wants one not given ends hotlimitd at start with the
// flag and the reason, before it serves (not a start answering every
// request Unavailable); the Redis client's own messages come as JSON log
// lines like the command's, not as lines of text among them.
func TestRedisCheckedAtStart(t *testing.T) {
	addr, _ := startRedis(t, "s3cret")
	// Port 1, where nothing listens: a port found free and closed again
	// could be taken meanwhile by a server another test starts, a Redis
	// without a password among them, which hotlimitd would then reach.
	gone := "127.0.0.1:1"
	dir := t.TempDir()
	writeRule(t, dir, "1")
	for _, tc := range []struct {
		name, says string
		args       []string
	}{
		{"unreachable", "-redis " + gone + ": dial tcp", []string{"-redis", gone}},
		{"wrong password", "-redis " + addr + ": Redis refused the password (-redis-password): WRONGPASS", []string{"-redis", addr, "-redis-password", "wrong"}},
		{"no password", "-redis " + addr + ": Redis refused the password (-redis-password): NOAUTH", []string{"-redis", addr}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "unreachable" {
				// Refused, it is asked again until the check's time is
				// up: a short one ends the test sooner. But not so short
				// that the first PING, whose four refused dials wait
				// 24-136 ms of backoff, could still be under way when it
				// is up: the reason would be the deadline, not the
				// refusal, the refusal never recorded. 2 s, as for the
				// refusals of TestRedisLateAndSilentAtStart.
				defer func(d time.Duration) { redisStartup = d }(redisStartup)
				redisStartup = 2 * time.Second
			}
			var logs redisproc.SyncBuffer
			done := make(chan error, 1)
			go func() {
				done <- run(context.Background(), append([]string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, tc.args...), &logs, func(string, string) {
					t.Error("served")
				})
			}()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.says)
				assert.Equal(t, 1, exitCode(err))
			case <-time.After(30 * time.Second):
				t.Fatal("still starting")
			}
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				assert.True(t, json.Valid([]byte(line)), "a JSON log line: %s", line)
			}
			if tc.name == "unreachable" {
				assert.Contains(t, logs.String(), `"msg":"redis client","detail":"redis: connection pool: failed to dial`)
			}
		})
	}
}

// silentProxy forwards connections to the Redis at target until silence is
// called; from then on it reads what it is sent and answers nothing, as a
// Redis that hangs after hotlimitd has checked it at start.
func silentProxy(t *testing.T, target string) (addr string, silence func()) {
	var quiet atomic.Bool
	addr = startProxy(t, target, func(net.Conn, []byte, bool) bool { return quiet.Load() })
	return addr, func() { quiet.Store(true) }
}

// TestSignalDuringRedisCheck: a signal while the start waits for a Redis
// that does not answer ends hotlimitd as a stop, exit status 0 and no
// error, not as a Redis failure.
func TestSignalDuringRedisCheck(t *testing.T) {
	addr, _ := startRedis(t, "")
	silent, silence := silentProxy(t, addr)
	silence()
	dir := t.TempDir()
	writeRule(t, dir, "1")
	var logs redisproc.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", silent}, &logs, func(string, string) { t.Error("served") })
	}()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs.String(), `"msg":"rate limit state in Redis"`); time.Sleep(5 * time.Millisecond) { // polling, with a deadline
		require.True(t, time.Now().Before(deadline), "no Redis client made")
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
		assert.Equal(t, 0, exitCode(err))
		assert.Contains(t, logs.String(), `"msg":"stopped before serving"`)
	case <-time.After(5 * time.Second):
		t.Fatal("the signal did not end the wait for Redis")
	}
}
