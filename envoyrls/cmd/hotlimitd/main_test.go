package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

const oneRule = "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: %d}\n"

func writeRule(t *testing.T, dir string, limit string) {
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(strings.Replace(oneRule, "%d", limit, 1)), 0o644))
}

// server is the command run in process by startServer: its addresses and a
// gRPC client connection to it.
type server struct {
	grpc, http string
	conn       *grpc.ClientConn
	cancel     context.CancelFunc
	done       chan struct{} // closed when run returns, with err
	err        error
}

// startServer runs the command with args, logging to logs, until stop is
// called or the test ends, and connects a gRPC client to it.
func startServer(t *testing.T, args []string, logs io.Writer) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{cancel: cancel, done: make(chan struct{})}
	addrs := make(chan [2]string, 1)
	go func() {
		defer close(s.done)
		s.err = run(ctx, args, logs, func(g, h string) { addrs <- [2]string{g, h} })
	}()
	select {
	case a := <-addrs:
		s.grpc, s.http = a[0], a[1]
	case <-s.done:
		cancel()
		t.Fatalf("run: %v", s.err)
	}
	t.Cleanup(func() { cancel(); <-s.done })
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	s.conn = conn
	return s
}

// stop cancels the run and requires a graceful stop within 15 s.
func (s *server) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case <-s.done:
		require.NoError(t, s.err)
	case <-time.After(15 * time.Second):
		t.Fatal("no graceful stop")
	}
}

// TestServe runs hotlimitd on loopback: gRPC, /json, /healthcheck,
// /metrics, reload on change, a rejected bad file, and a graceful stop.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reload-interval", "20ms"}, &logs)
	client := pb.NewRateLimitServiceClient(srv.conn)
	call := func(value string) *pb.RateLimitResponse {
		resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: value}},
		}}})
		require.NoError(t, err)
		return resp
	}
	assert.Equal(t, pb.RateLimitResponse_OK, call("1").OverallCode)

	base := "http://" + srv.http
	res, err := http.Post(base+"/json", "application/json", strings.NewReader(`{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"1"}]}]}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Contains(t, string(body), `"overallCode":"OK"`)
	assert.Contains(t, string(body), `"requestsPerUnit":2`)
	res, err = http.Post(base+"/json", "application/json", strings.NewReader(`{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"1"}]}]}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusTooManyRequests, res.StatusCode, "the third hit is over")
	res, err = http.Post(base+"/json", "application/json", strings.NewReader(`{"domain":""}`))
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	assert.Contains(t, string(body), "domain must not be empty")

	res, err = http.Get(base + "/healthcheck")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)

	res, err = http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	assert.Contains(t, string(body), `ratelimit_service_rate_limit_total_hits{domain="web",key="web.ip",key1="ip",key2=""} 3`)
	assert.Contains(t, string(body), `ratelimit_service_rate_limit_over_limit{domain="web",key="web.ip",key1="ip",key2=""} 1`)
	assert.NotContains(t, string(body), `value="1"`, "no label per descriptor value")

	// Reload on change: the new limit is in force without a restart.
	writeRule(t, dir, "5")
	require.Eventually(t, func() bool { return call("2").Statuses[0].CurrentLimit.GetRequestsPerUnit() == 5 }, 15*time.Second, 20*time.Millisecond)

	// A bad file is rejected with a log line naming it; the rules stay.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: fortnight}\n"), 0o644))
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "invalid rate limit unit 'fortnight'") }, 15*time.Second, 20*time.Millisecond)
	assert.Contains(t, logs.String(), "config rejected, previous config stays in force")
	assert.Equal(t, uint32(5), call("3").Statuses[0].CurrentLimit.GetRequestsPerUnit())

	srv.stop(t)
	assert.Contains(t, logs.String(), `"msg":"stopped"`)
}

func TestFlags(t *testing.T) {
	_, err := parse(nil, io.Discard)
	assert.ErrorContains(t, err, "-config DIR is required")
	t.Setenv("HOTLIMITD_GRPC", ":9999")
	f, err := parse([]string{"-config", "x"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, ":9999", f.grpcAddr, "from the environment")
	f, err = parse([]string{"-config", "x", "-grpc", ":1"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, ":1", f.grpcAddr, "the command line wins")
	f.redisAddr, f.failure = "127.0.0.1:1", "sometimes"
	_, _, err = f.options(nil, nil)
	assert.ErrorContains(t, err, `-redis-failure "sometimes"`)
	f.headers = "all"
	_, _, err = f.options(nil, nil)
	assert.ErrorContains(t, err, `-headers "all"`)
}

// TestMaxKeysFlag: -max-keys caps the keys a limiter (a policy) holds: with two keys held
// and neither idle, a third descriptor value is over the limit, where it
// passes without the flag; /metrics shows the keys held as hotlimit_keys.
// A negative cap is refused.
func TestMaxKeysFlag(t *testing.T) {
	for _, maxKeys := range []string{"2", "0"} {
		t.Run("max-keys="+maxKeys, func(t *testing.T) {
			dir := t.TempDir()
			writeRule(t, dir, "5")
			srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-max-keys", maxKeys}, io.Discard)
			client := pb.NewRateLimitServiceClient(srv.conn)
			code := func(ip string) pb.RateLimitResponse_Code {
				resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
					Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: ip}},
				}}})
				require.NoError(t, err)
				return resp.OverallCode
			}
			assert.Equal(t, pb.RateLimitResponse_OK, code("10.0.0.1"))
			assert.Equal(t, pb.RateLimitResponse_OK, code("10.0.0.2"))
			want, keys := pb.RateLimitResponse_OVER_LIMIT, 2
			if maxKeys == "0" {
				want, keys = pb.RateLimitResponse_OK, 3
			}
			assert.Equal(t, want, code("10.0.0.3"), "a third key")
			assert.Equal(t, pb.RateLimitResponse_OK, code("10.0.0.1"), "a key held still counts")

			res, err := http.Get("http://" + srv.http + "/metrics")
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Contains(t, string(body), fmt.Sprintf(`hotlimit_keys{limiter="hotlimitd"} %d`, keys))
		})
	}
	_, err := parse([]string{"-config", "x", "-max-keys", "-1"}, io.Discard)
	assert.ErrorContains(t, err, "-max-keys -1")
}

// TestRedisLeaseFlag: a lease without a ttl is refused before any request,
// naming the flag.
func TestRedisLeaseFlag(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	err := run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", "127.0.0.1:1",
		"-redis-lease", "5", "-redis-lease-ttl", "0s"}, io.Discard, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-redis-lease-ttl 0s: want more than 0")
}

// TestRedisLeaseOnlyWhereItApplies: with -redis-lease, a configuration
// holding a rule of an algorithm that cannot lease (SlidingLog) still loads:
// its rule asks Redis every time, the fixed window's leases (this process
// then holds the key's lease, hotlimit_keys on /metrics), and both keep
// their limits. The leases last the test (-redis-lease-ttl 1h): one that
// ended between two calls of a slow run would leave its leftovers taken
// in Redis, and the fixed window short of its 3.
func TestRedisLeaseOnlyWhereItApplies(t *testing.T) {
	addr, _ := startRedis(t, "")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`domain: web
descriptors:
  - key: ip
    rate_limit: {unit: hour, requests_per_unit: 3}
  - key: user
    rate_limit: {algorithm: SlidingLog, unit: hour, requests_per_unit: 2}
`), 0o644))
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", addr,
		"-redis-lease", "2", "-redis-lease-ttl", "1h", "-redis-prefix", t.Name() + ":", "-redis-timeout", "10s"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	passes := func(key string) int {
		n := 0
		for range 5 {
			resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
				Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}},
			}}})
			require.NoError(t, err)
			if resp.OverallCode == pb.RateLimitResponse_OK {
				n++
			}
		}
		return n
	}
	leases := func() string {
		res, err := http.Get("http://" + srv.http + "/metrics")
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		for line := range strings.Lines(string(body)) {
			if strings.HasPrefix(line, `hotlimit_keys{limiter="hotlimitd"} `) {
				return strings.TrimSpace(line)
			}
		}
		return "no hotlimit_keys"
	}
	assert.Equal(t, 3, passes("ip"), "the fixed window, leased")
	assert.Equal(t, `hotlimit_keys{limiter="hotlimitd"} 1`, leases(), "the fixed window's key holds a lease")
	assert.Equal(t, 2, passes("user"), "the sliding log, on Redis every time")
	assert.Equal(t, `hotlimit_keys{limiter="hotlimitd"} 1`, leases(), "the sliding log's key holds none")
	srv.stop(t)
}

// startRedis starts a redis-server with password pass on a free loopback
// port and returns its address and process, once the server answering
// there is that process; without redis-server the test is skipped, except
// in CI.
func startRedis(t *testing.T, pass string) (string, *redisproc.Process) {
	t.Helper()
	addr, proc, err := redisproc.Start(t, redisproc.Config{
		Password: pass,
		Args: func(port int) []string {
			return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--requirepass", pass}
		},
	})
	require.NoError(t, err)
	return addr, proc
}

// TestRedisFlags: hotlimitd on a password-protected Redis decides there;
// once Redis stops answering, every limited request is Unavailable (the
// reference's answer, which Envoy allows unless failure_mode_deny), and
// with -redis-failure open it is answered OK.
func TestRedisFlags(t *testing.T) {
	addr, _ := startRedis(t, "s3cret")
	dir := t.TempDir()
	writeRule(t, dir, "1")
	start := func(extra ...string) pb.RateLimitServiceClient {
		args := append([]string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", t.Name() + strconv.Itoa(len(extra)) + ":"}, extra...)
		return pb.NewRateLimitServiceClient(startServer(t, args, io.Discard).conn)
	}
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}

	good := start("-redis-password", "s3cret", "-redis-timeout", "10s") // the first call loads the script
	resp, err := good.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	resp, err = good.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode, "counted in Redis")

	proxied, silence := silentProxy(t, addr)
	bad := start("-redis-password", "s3cret", "-redis", proxied, "-redis-timeout", "50ms")
	open := start("-redis-password", "s3cret", "-redis", proxied, "-redis-timeout", "50ms", "-redis-failure", "open")
	silence()
	_, err = bad.ShouldRateLimit(context.Background(), req)
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))

	resp, err = open.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
}

// TestRedisFallbacksOnMetrics: once Redis is gone, the requests that
// -redis-failure answers instead show on /metrics as
// hotlimit_fallbacks_total, by reason, in series that were there at 0
// while Redis decided: so that increase(hotlimit_fallbacks_total[5m]),
// which counts nothing into a series' first sample, sees the first outage.
func TestRedisFallbacksOnMetrics(t *testing.T) {
	addr, redisServer := startRedis(t, "s3cret")
	dir := t.TempDir()
	writeRule(t, dir, "5")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", addr,
		"-redis-password", "s3cret", "-redis-timeout", "10s", "-redis-failure", "open", "-redis-prefix", t.Name() + ":"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}

	resp, err := client.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	var zeros []string
	for _, reason := range hotlimit.FallbackReasons() {
		zeros = append(zeros, `hotlimit_fallbacks_total{backend="redis",reason="`+reason+`"} 0`)
	}
	assert.ElementsMatch(t, zeros, fallbackSeries(t, srv), "Redis decided: every reason at 0")

	redisServer.Kill()
	for range 2 {
		resp, err = client.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "-redis-failure open lets it through")
	}
	assert.Contains(t, fallbackSeries(t, srv), `hotlimit_fallbacks_total{backend="redis",reason="error"} 2`)
}

// TestRedisDownIsAnError: a Redis that has stopped, whose port refuses
// connections, is an error, with the refusal in the log, not a Redis that
// does not answer within -redis-timeout: the client dials once per
// attempt, rather than five times with a backoff (some 400 ms) that
// outlasts the timeout, so that the operator reads that Redis is down, not
// that it is slow. A timeout of 1 s leaves a loaded machine ample time for
// four refused dials and go-redis's backoff between them.
func TestRedisDownIsAnError(t *testing.T) {
	addr, redisServer := startRedis(t, "")
	dir := t.TempDir()
	writeRule(t, dir, "5")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-timeout", "1s", "-redis-prefix", t.Name() + ":"}, &logs)
	client := pb.NewRateLimitServiceClient(srv.conn)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := client.ShouldRateLimit(ctx, req)
	require.NoError(t, err)

	redisServer.Kill()
	_, err = client.ShouldRateLimit(ctx, req)
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Contains(t, status.Convert(err).Message(), "rate limit backend failed (error)")
	assert.Contains(t, logs.String(), "connect: connection refused")
}

// TestRedisFailureErrorCountsFallbacks: under -redis-failure error, as
// under the three policies, a request Redis could not decide counts in
// hotlimit_fallbacks_total, as -h and the README say, so that the alert
// they suggest on it fires whichever policy answers.
func TestRedisFailureErrorCountsFallbacks(t *testing.T) {
	addr, redisServer := startRedis(t, "")
	dir := t.TempDir()
	writeRule(t, dir, "5")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-redis", addr,
		"-redis-timeout", "1s", "-redis-failure", "error", "-redis-prefix", t.Name() + ":"}, io.Discard)
	client := pb.NewRateLimitServiceClient(srv.conn)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	_, err := client.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, fallbackSeries(t, srv), `hotlimit_fallbacks_total{backend="redis",reason="error"} 0`)

	redisServer.Kill()
	_, err = client.ShouldRateLimit(context.Background(), req)
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, fallbackSeries(t, srv), `hotlimit_fallbacks_total{backend="redis",reason="error"} 1`)
	srv.stop(t)
}

// TestRedisTimeoutFlag: -redis-timeout bounds the wait for a Redis that
// accepts connections and never answers: 1 ms gives Unavailable, 1 h leaves
// the caller's own deadline to pass first.
func TestRedisTimeoutFlag(t *testing.T) {
	redisAddr, _ := startRedis(t, "")
	dir := t.TempDir()
	writeRule(t, dir, "5")
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	call := func(timeout string, wait time.Duration) error {
		addr, silence := silentProxy(t, redisAddr)
		args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-timeout", timeout}
		srv := startServer(t, args, io.Discard)
		defer srv.stop(t)
		silence()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(ctx, req)
		return err
	}
	err := call("1ms", time.Minute)
	assert.Equal(t, codes.Unavailable, status.Code(err), "the server gave up on Redis: %v", err)
	err = call("1h", 2*time.Second)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "the server still waits for Redis: %v", err)
}

// TestReloadOff: -reload-interval 0 serves without watching the directory,
// says so in the log, and stops cleanly.
func TestReloadOff(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-reload-interval", "0"}, &logs)
	resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
	}}})
	require.NoError(t, err)
	assert.Equal(t, uint32(2), resp.Statuses[0].CurrentLimit.GetRequestsPerUnit())
	assert.Contains(t, logs.String(), `"msg":"config reload off"`)
	srv.stop(t)
}

// TestHealthServiceNames: the gRPC health service answers SERVING for the
// server (""), for "ratelimit" (the name the reference registers, which
// Kubernetes probes and Envoy health checks written for it ask for) and for
// the rate limit service's full name.
func TestHealthServiceNames(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, io.Discard)
	hc := healthpb.NewHealthClient(srv.conn)
	for _, name := range []string{"", "ratelimit", "envoy.service.ratelimit.v3.RateLimitService"} {
		resp, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: name})
		if assert.NoError(t, err, "service %q", name) {
			assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus(), "service %q", name)
		}
	}
	srv.stop(t)
}

// TestSecondSignalStopsAtOnce: the first SIGTERM drains (here it would wait
// for a /json request whose body never comes), a second one stops the
// process at once, as an operator pressing Ctrl-C twice expects.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	dir := t.TempDir()
	writeRule(t, dir, "2")
	cmd, waitLog, exited := startBinary(t, "-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-drain", "1m")
	httpAddr, _ := waitLog("serving")["http"].(string)
	conn, err := net.Dial("tcp", httpAddr)
	require.NoError(t, err)
	defer conn.Close()
	// The server answers 100 Continue once the handler reads the body: from
	// then on the request is in flight, and a drain waits for it.
	_, err = io.WriteString(conn, "POST /json HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 1000\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(15*time.Second)))
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, status, "100 Continue")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	waitLog("shutting down")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee)
		ws, _ := ee.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled(), "ended by the second signal: %v", err)
	case <-time.After(20 * time.Second): // far below the 1 m drain, far above a loaded machine's delays
		t.Fatal("still draining after a second SIGTERM")
	}
}

// TestRedisClusterLogged: the startup log says whether Redis is a cluster
// as the client sees it: several addresses make one without -redis-cluster,
// one address with the flag does too, one address alone does not.
func TestRedisClusterLogged(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		cluster bool
	}{
		{[]string{"-redis", "127.0.0.1:1,127.0.0.1:2"}, true},
		{[]string{"-redis", "127.0.0.1:1", "-redis-cluster"}, true},
		{[]string{"-redis", "127.0.0.1:1"}, false},
	} {
		f, err := parse(append([]string{"-config", "x"}, tc.args...), io.Discard)
		require.NoError(t, err)
		var logs redisproc.SyncBuffer
		_, client, err := f.options(slog.New(slog.NewJSONHandler(&logs, nil)), nil)
		require.NoError(t, err)
		require.NoError(t, client.Close())
		assert.Contains(t, logs.String(), fmt.Sprintf(`"cluster":%v`, tc.cluster), "%q", tc.args)
	}
}

// kubeUpdate writes files into dir as the kubelet updates a ConfigMap
// volume: a new timestamped directory, a temporary symlink to it renamed
// over ..data, the symlinks the application sees (name -> ..data/name),
// then the previous version removed.
func kubeUpdate(t *testing.T, dir string, version int, files map[string]string) {
	t.Helper()
	ts := fmt.Sprintf("..2026_12_05_02_10_32.%d", version)
	require.NoError(t, os.Mkdir(filepath.Join(dir, ts), 0o755))
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ts, name), []byte(data), 0o644))
	}
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	require.NoError(t, os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	for name := range files {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			require.NoError(t, os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
		}
	}
	if old != "" {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, old)))
	}
}

// TestServeConfigMap: hotlimitd serves a directory laid out as a
// Kubernetes ConfigMap volume, reloads it when the kubelet swaps ..data
// (no path it reads changes), and the rule that did not change keeps its
// count across the reload.
func TestServeConfigMap(t *testing.T) {
	const rules = "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: 3}\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: %d}\n"
	dir := t.TempDir()
	kubeUpdate(t, dir, 1, map[string]string{"web.yaml": fmt.Sprintf(rules, 2)})
	var logs redisproc.SyncBuffer
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-reload-interval", "20ms"}, &logs)
	client := pb.NewRateLimitServiceClient(srv.conn)
	call := func(key string) *pb.RateLimitResponse_DescriptorStatus {
		resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}},
		}}})
		require.NoError(t, err)
		return resp.Statuses[0]
	}
	assert.Equal(t, uint32(2), call("ip").LimitRemaining)
	assert.NotContains(t, logs.String(), "config warning", "..data and the timestamped directory are not read")

	kubeUpdate(t, dir, 2, map[string]string{"web.yaml": fmt.Sprintf(rules, 5)})
	require.Eventually(t, func() bool {
		return strings.Count(logs.String(), `"msg":"config loaded"`) == 2
	}, 10*time.Second, 10*time.Millisecond, "reloaded: %s", &logs)
	assert.Equal(t, uint32(5), call("user").CurrentLimit.GetRequestsPerUnit())
	assert.Equal(t, uint32(1), call("ip").LimitRemaining, "the unchanged rule kept its count")
	assert.NotContains(t, logs.String(), "rejected")
	assert.NotContains(t, logs.String(), "unreadable")
	srv.stop(t)
}

// TestHealthcheckBodyIsTheReferences: /healthcheck answers 200 with the
// body "OK", byte for byte the reference's, for probes that compare it.
func TestHealthcheckBodyIsTheReferences(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, io.Discard)
	res, err := http.Get("http://" + srv.http + "/healthcheck")
	require.NoError(t, err)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "OK", string(body))
	srv.stop(t)
}

// TestShutdownGivesLeasesBack: with -redis-lease 2, a request takes from
// Redis its own hit and a lease of 2 more, the whole limit of 3; the
// graceful stop gives the unspent lease back, so the next process (here
// without leases, as a replica would see it) has the limit less the one
// request (2), not less the lease too (0).
func TestShutdownGivesLeasesBack(t *testing.T) {
	addr, _ := startRedis(t, "")
	dir := t.TempDir()
	writeRule(t, dir, "3")
	prefix := t.Name() + ":"
	call := func(srv *server) pb.RateLimitResponse_Code {
		resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "a"}},
		}}})
		require.NoError(t, err)
		return resp.OverallCode
	}
	leased := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr,
		"-redis-lease", "2", "-redis-lease-ttl", "1h", "-redis-prefix", prefix, "-redis-timeout", "10s"}, io.Discard)
	require.Equal(t, pb.RateLimitResponse_OK, call(leased))
	leased.stop(t)

	next := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-prefix", prefix, "-redis-timeout", "10s"}, io.Discard)
	passed := 0
	for range 3 {
		if call(next) == pb.RateLimitResponse_OK {
			passed++
		}
	}
	assert.Equal(t, 2, passed, "3 an hour, less the one request the stopped process answered")
	next.stop(t)
}

// TestMaxKeysOverridesOnRedis: with -redis, -max-keys sizes tables only in
// the -redis-failure local fallback, so only there does it lower the bound
// on distinct limit overrides (to 4 at 1000000, the 5th ResourceExhausted);
// with -redis-failure error the 5th is decided (here by a Redis that cannot
// be reached: Unavailable), as without the flag.
func TestMaxKeysOverridesOnRedis(t *testing.T) {
	d, err := envoyrls.ParseDomain("web.yaml", []byte(`
domain: web
descriptors:
  - key: ip
    rate_limit: {unit: hour, requests_per_unit: 100}
`))
	require.NoError(t, err)
	cfg, err := envoyrls.NewConfig(d)
	require.NoError(t, err)
	for failure, fifth := range map[string]codes.Code{"error": codes.Unavailable, "local": codes.ResourceExhausted} {
		t.Run("redis-failure="+failure, func(t *testing.T) {
			f, err := parse([]string{"-config", "x", "-redis", "127.0.0.1:1", "-redis-failure", failure, "-max-keys", "1000000"}, io.Discard)
			require.NoError(t, err)
			opts, client, err := f.options(slog.New(slog.DiscardHandler), nil)
			require.NoError(t, err)
			t.Cleanup(func() { client.Close() })
			s, err := envoyrls.New(cfg, opts...)
			require.NoError(t, err)
			for rpu := uint32(1); rpu <= 5; rpu++ {
				_, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
					Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "10.0.0.1"}},
					Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: rpu, Unit: typev3.RateLimitUnit_HOUR},
				}}})
				want := map[string]codes.Code{"error": codes.Unavailable, "local": codes.OK}[failure]
				if rpu == 5 {
					want = fifth
				}
				assert.Equal(t, want, status.Code(err), "override %d: %v", rpu, err)
			}
		})
	}
}
