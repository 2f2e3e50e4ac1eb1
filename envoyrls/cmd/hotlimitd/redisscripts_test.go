package main

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
)

// TestScriptLoadUnansweredAtStart: a Redis that answers PING but not SCRIPT
// LOAD within the check's time is no refusal of scripts: hotlimitd starts,
// with a warning that says so (not advice on ACL permissions, which would
// send its operator to change a user that lacks nothing), and its limiters
// send the scripts as they need them.
func TestScriptLoadUnansweredAtStart(t *testing.T) {
	addr, _ := startRedis(t, "")
	// Every command but SCRIPT LOAD reaches Redis; SCRIPT LOAD is dropped,
	// as by a Redis too busy to answer it.
	proxy := startProxy(t, addr, func(_ net.Conn, b []byte, answer bool) bool {
		return !answer && bytes.Contains(bytes.ToLower(b), []byte("$6\r\nscript\r\n$4\r\nload\r\n"))
	})
	defer func(d time.Duration) { redisStartup = d }(redisStartup)
	redisStartup = 500 * time.Millisecond
	dir := t.TempDir()
	writeRule(t, dir, "1")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", proxy,
		"-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}, &logs)
	assert.Contains(t, logs.String(), `"level":"WARN","msg":"rate limit scripts not loaded at start: Redis answered PING, but not SCRIPT LOAD in time`)
	assert.NotContains(t, logs.String(), "+@scripting", "no ACL is at fault")
	countsOneAndStops(t, srv)
}

// TestRedisUserMayEvalButNotScriptLoad: an ACL user that may run scripts
// by EVALSHA and EVAL but not SCRIPT LOAD (least privilege: "+evalsha
// +eval") has every decision made in Redis, the source sent once Redis
// answers NOSCRIPT: hotlimitd starts there, as it did before it loaded
// the scripts at start, rather than end on a refusal no request meets.
func TestRedisUserMayEvalButNotScriptLoad(t *testing.T) {
	addr := startRedisWithUser(t, "-script")
	dir := t.TempDir()
	writeRule(t, dir, "1")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-user", "limiter", "-redis-password", "limiterpw",
		"-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}, io.Discard)
	countsOneAndStops(t, srv)
}
