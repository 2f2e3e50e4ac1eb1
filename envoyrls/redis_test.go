package envoyrls

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// startRedis starts a redis-server with args on a free loopback port for
// the test and returns its address and the process, once the server
// answering there is that process. Without redis-server the test is
// skipped, except in CI (CI set), where it fails.
func startRedis(t *testing.T, args ...string) (string, *redisproc.Process) {
	t.Helper()
	return startRedisWith(t, false, func(int) []string { return args })
}

// startRedisWith starts a redis-server with the arguments args returns for
// its port, after the ones every test server has; with bus, on a port whose
// cluster bus port, 10000 above it, is free too.
func startRedisWith(t *testing.T, bus bool, args func(port int) []string) (string, *redisproc.Process) {
	t.Helper()
	addr, proc, err := redisproc.Start(t, redisproc.Config{
		Bus: bus,
		Args: func(port int) []string {
			return append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"}, args(port)...)
		},
	})
	require.NoError(t, err)
	return addr, proc
}

// startRedisCluster starts three cluster-enabled redis-servers on free
// loopback ports, joins them as the masters of a cluster with redis-cli,
// and returns their addresses once every node reports cluster_state:ok.
// Without redis-server or redis-cli the test is skipped, except in CI (CI
// set), where it fails.
func startRedisCluster(t *testing.T) []string {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-cli is required in CI: %v", err)
		}
		t.Skipf("redis-cli not installed: %v", err)
	}
	var addrs []string
	for range 3 {
		// A fresh nodes.conf per attempt: a node that lost its port must
		// not leave its identity to the next one.
		addr, _ := startRedisWith(t, true, func(int) []string {
			return []string{"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(t.TempDir(), "nodes.conf")}
		})
		addrs = append(addrs, addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	require.NoError(t, err, "redis-cli --cluster create: %s", out)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		require.Eventually(t, func() bool {
			info, err := c.ClusterInfo(context.Background()).Result()
			return err == nil && strings.Contains(info, "cluster_state:ok")
		}, 10*time.Second, 20*time.Millisecond, "%s reports cluster_state:ok", addr)
		_ = c.Close()
	}
	return addrs
}

// inRedis is inProcess with every rule's state in Redis at addr. A call
// waits up to 10 s for Redis, not redislimit's 100 ms: on a loaded machine,
// under -race, a round trip can take longer, and these tests are about
// decisions, not failures.
func inRedis(t *testing.T, addr string, opts ...Option) *harness {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	f := redislimit.Factory(client, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second))
	return inProcess(t, append([]Option{WithLimiterOptions(hotlimit.WithFactory(f))}, opts...)...)
}

// TestConformanceRedisCluster runs the conformance scenarios with every
// rule's state in a Redis cluster of three masters, as hotlimitd keeps it
// with -redis a,b,c: the keys of one request's descriptors spread over the
// masters, and each descriptor is decided as on a single Redis.
func TestConformanceRedisCluster(t *testing.T) {
	addrs := startRedisCluster(t)
	client := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	_, isCluster := client.(*redis.ClusterClient)
	require.True(t, isCluster, "several addresses make a cluster client")
	f := redislimit.Factory(client, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second), redislimit.WithFailPolicy(redislimit.FailClosed))
	h := inProcess(t, WithLimiterOptions(hotlimit.WithFactory(f)))
	t.Run("Scenarios", func(t *testing.T) { conformance(t, h) })
	t.Run("AlgorithmsExact", func(t *testing.T) { algosExact(t, h) })
	t.Run("AllOrNothing", func(t *testing.T) {
		// the denied request's refund reaches each descriptor's key,
		// wherever its slot is
		h := inProcess(t, WithLimiterOptions(hotlimit.WithFactory(f)), WithAllOrNothing(true))
		a, b := desc("two_a", "all"), desc("two_b", "all")
		for range 2 {
			assert.Equal(t, ok, h.call(t, "conf", 0, a, b).OverallCode)
		}
		assert.Equal(t, over, h.call(t, "conf", 0, a, b).OverallCode)
		assert.Equal(t, uint32(2), h.call(t, "conf", 0, a).Statuses[0].LimitRemaining, "the denied request was refunded")
	})
	var keys int64
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		n, err := c.DBSize(context.Background()).Result()
		_ = c.Close()
		require.NoError(t, err)
		assert.Positive(t, n, "%s holds some of the keys", addr)
		keys += n
	}
	t.Logf("%d keys over %d masters", keys, len(addrs))
}

// TestConformanceRedis runs the conformance scenarios and the algorithms'
// exactness with the state in a real Redis.
func TestConformanceRedis(t *testing.T) {
	addr, _ := startRedis(t)
	t.Run("Scenarios", func(t *testing.T) { conformance(t, inRedis(t, addr)) })
	t.Run("AlgorithmsExact", func(t *testing.T) { algosExact(t, inRedis(t, addr)) })
	t.Run("AllOrNothing", func(t *testing.T) {
		h := inRedis(t, addr, WithAllOrNothing(true))
		a, b := desc("two_a", "x"), desc("two_b", "x")
		for range 2 {
			assert.Equal(t, ok, h.call(t, "conf", 0, a, b).OverallCode)
		}
		assert.Equal(t, over, h.call(t, "conf", 0, a, b).OverallCode)
		assert.Equal(t, uint32(2), h.call(t, "conf", 0, a).Statuses[0].LimitRemaining, "the denied request was refunded")
	})
}

// TestRedisFailure: with Redis gone, a request gets Unavailable by default
// (Envoy then allows it unless failure_mode_deny), and the failure policy's
// answer with WithBackendErrors(false).
func TestRedisFailure(t *testing.T) {
	addr, redisServer := startRedis(t)
	var now atomic.Int64
	now.Store(t0)
	build := func(errs bool, policy redislimit.FailPolicy, opts ...Option) *Server {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = client.Close() })
		cfg, err := LoadDir("testdata/conformance")
		require.NoError(t, err)
		s, err := New(cfg, append([]Option{WithClock(now.Load), WithBackendErrors(errs), WithLogger(slog.New(slog.DiscardHandler)),
			WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(policy))))}, opts...)...)
		require.NoError(t, err)
		return s
	}
	strict, open := build(true, redislimit.FailClosed), build(false, redislimit.FailOpen)
	strictAll := build(true, redislimit.FailOpen, WithAllOrNothing(true))
	req := &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("per_hour", "f")}}
	_, err := strict.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err, "Redis up")

	redisServer.Kill()
	_, err = strict.ShouldRateLimit(context.Background(), req)
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Contains(t, err.Error(), "rate limit backend")
	_, err = strictAll.ShouldRateLimit(context.Background(), req)
	assert.Equal(t, codes.Unavailable, status.Code(err), "all-or-nothing mode reports the failure too")
	resp, err := open.ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, ok, resp.OverallCode, "FailOpen answers OK")
	resp, err = strict.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{desc("unlimited", "x")}})
	require.NoError(t, err, "a request that needs no backend is still served")
	assert.Equal(t, ok, resp.OverallCode)
}

// pipelines counts a client's pipelines and commands sent by themselves.
type pipelines struct{ singles, pipes, piped atomic.Int64 }

func (p *pipelines) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *pipelines) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		p.singles.Add(1)
		return next(ctx, cmd)
	}
}

func (p *pipelines) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		p.pipes.Add(1)
		p.piped.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// TestRedisOneRoundTripPerRequest: the descriptors of one request, under
// rules of different policies, go to Redis in one pipeline, as the
// reference sends them, and each gets its own status, in order.
func TestRedisOneRoundTripPerRequest(t *testing.T) {
	addr, _ := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	var trips pipelines
	client.AddHook(&trips)
	f := redislimit.Factory(client, redislimit.WithTimeout(10*time.Second))
	h := inProcess(t, WithLimiterOptions(hotlimit.WithFactory(f)))
	h.call(t, "conf", 0, desc("two_a", "warm"), desc("two_b", "warm")) // loads the scripts
	singles, pipes, piped := trips.singles.Load(), trips.pipes.Load(), trips.piped.Load()
	resp := h.call(t, "conf", 0, desc("two_a", "x"), desc("unlimited", "x"), desc("two_b", "x"), desc("per_hour", "x"))
	assert.Equal(t, singles, trips.singles.Load(), "no command by itself")
	assert.Equal(t, pipes+1, trips.pipes.Load(), "one pipeline")
	assert.Equal(t, piped+3, trips.piped.Load(), "of the three limited descriptors")
	for i, want := range []uint32{4, 1<<32 - 1, 1, 2} {
		assert.Equal(t, want, resp.Statuses[i].LimitRemaining, "status %d", i)
	}
	assert.Equal(t, uint32(5), resp.Statuses[0].CurrentLimit.RequestsPerUnit)
	assert.Equal(t, uint32(2), resp.Statuses[2].CurrentLimit.RequestsPerUnit)
	assert.Equal(t, uint32(3), resp.Statuses[3].CurrentLimit.RequestsPerUnit)
}

// TestRedisHitsBeyondInt32: on Redis a limit may exceed 2^31 (here an
// override of 4,000,000,000 a day, as a byte budget sends it), and a
// hits_addend above 2^31 counts in full: 3e9 leaves 1e9, and 1.5e9 more is
// over.
func TestRedisHitsBeyondInt32(t *testing.T) {
	if math.MaxInt < 4e9 {
		t.Skip("a limit of 4e9 needs a 64-bit int; TestAddendBeyondPlatformInt checks what a 32-bit platform does")
	}
	addr, _ := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	// As hotlimitd builds it: no in-memory fallback, whose range is narrower.
	f := redislimit.Factory(client, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second), redislimit.WithFailPolicy(redislimit.FailClosed))
	h := inProcess(t, WithLimiterOptions(hotlimit.WithFactory(f)))
	d := desc("override", "bytes"+h.run)
	d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 4_000_000_000, Unit: typev3.RateLimitUnit_DAY}
	resp := h.call(t, "conf", 3_000_000_000, d)
	assert.Equal(t, ok, resp.OverallCode)
	assert.Equal(t, uint32(1_000_000_000), resp.Statuses[0].LimitRemaining)
	resp = h.call(t, "conf", 1_500_000_000, d)
	assert.Equal(t, over, resp.OverallCode, "4.5e9 hits of 4e9")
	d.HitsAddend = wrapperspb.UInt64(1 << 40)
	resp = h.call(t, "conf", 0, d)
	assert.Equal(t, over, resp.OverallCode, "a descriptor's addend beyond any limit is over")
}

// waitingLimiter decides under a context only when it is done, as a backend
// that never answers: it returns the context's error. Under a context whose
// deadline has passed before its timer ran, it fails at once with a
// socket's timeout, as a client that sets the deadline on its socket does.
type waitingLimiter struct{ hotlimit.Limiter }

var errSocketTimeout = errors.New("read tcp: i/o timeout")

func (waitingLimiter) TakeContext(ctx context.Context, _ string, _ int) (hotlimit.Decision, error) {
	if d, ok := ctx.Deadline(); ok && ctx.Err() == nil && time.Now().After(d) {
		return hotlimit.Decision{}, errSocketTimeout
	}
	<-ctx.Done()
	return hotlimit.Decision{}, fmt.Errorf("backend: %w", ctx.Err())
}

// TestCallersDeadlineIsNotABackendFailure: a backend still deciding when the
// caller's deadline passes gives DeadlineExceeded (Canceled when the caller
// went away), the call's own status, whichever side's timer fires first,
// the socket's before the context's included; Unavailable stays for the
// backend's own failures.
func TestCallersDeadlineIsNotABackendFailure(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		return waitingLimiter{lim}, err
	}
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = s.ShouldRateLimit(ctx, req)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "%v", err)

	_, err = s.ShouldRateLimit(limitertest.PastDeadline(context.Background()), req)
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err), "the socket's timer first: %v", err)

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = s.ShouldRateLimit(ctx, req)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)
}

// ctxRefunder is a ContextRefunder over an in-memory limiter whose refunds,
// as redislimit's, fail without giving back under a context that is done.
// With deadline set, its takes end the call's context (as the caller's
// deadline passing during the round trip does) and fail with its error;
// with answered set too, they decide all the same (the deadline passed as
// the answer came).
type ctxRefunder struct {
	hotlimit.Refunder
	deadline func()
	answered bool
}

func (l *ctxRefunder) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if l.deadline != nil {
		l.deadline()
		if !l.answered {
			return hotlimit.Decision{}, hotlimit.Receipt{}, fmt.Errorf("backend: %w", ctx.Err())
		}
	}
	d, r := l.TakeReceipt(key, n)
	return d, r, nil
}

func (l *ctxRefunder) RefundContext(ctx context.Context, key string, r hotlimit.Receipt) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.Refund(key, r)
	return nil
}

// deadlineServer is an all-or-nothing server of domain web: a, 5 per
// hour, and b, bLimit per hour, over ctxRefunders. The take of b ends ctx
// (the caller's deadline passing during its round trip), failing with it,
// or deciding all the same when answered.
func deadlineServer(t *testing.T, bLimit int, answered bool) (*Server, context.Context) {
	t.Helper()
	d, err := ParseDomain("web.yaml", []byte(fmt.Sprintf("domain: web\ndescriptors:\n"+
		"  - key: a\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"+
		"  - key: b\n    rate_limit: {unit: hour, requests_per_unit: %d}\n", bLimit)))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		l := &ctxRefunder{Refunder: lim.(hotlimit.Refunder)}
		if c.Limit == bLimit {
			l.deadline, l.answered = cancel, answered
		}
		return l, nil
	}
	s, err := New(cfg, WithAllOrNothing(true), WithLogger(slog.New(slog.DiscardHandler)), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	return s, ctx
}

// entryOne is a descriptor of one entry, key k with value "1".
func entryOne(k string) *rlext.RateLimitDescriptor {
	return &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: k, Value: "1"}}}
}

// TestAllOrNothingRefundsWhenTheDeadlinePasses: in all-or-nothing mode, a
// request whose deadline passes while the backend decides its second
// descriptor gives back what its first took: the refund is made under a
// context that the deadline does not end, as for a denied request.
func TestAllOrNothingRefundsWhenTheDeadlinePasses(t *testing.T) {
	s, ctx := deadlineServer(t, 7, false)
	_, err := s.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a"), entryOne("b")}})
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a")}})
	require.NoError(t, err)
	assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "the failed request's hit on a was given back: this one's is the first")
}

// TestAllOrNothingGivesBackOnceWhenTheDeadlinePasses: the request whose
// deadline passes gives back its own hit on a once, and no more: the hit
// an earlier request made on a still counts.
func TestAllOrNothingGivesBackOnceWhenTheDeadlinePasses(t *testing.T) {
	s, ctx := deadlineServer(t, 7, false)
	one := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a")}}
	resp, err := s.ShouldRateLimit(context.Background(), one)
	require.NoError(t, err)
	require.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining)
	_, err = s.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a"), entryOne("b")}})
	require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
	resp, err = s.ShouldRateLimit(context.Background(), one)
	require.NoError(t, err)
	assert.Equal(t, uint32(3), resp.Statuses[0].LimitRemaining, "the earlier hit on a and this one count")
}

// TestAllOrNothingRefundsADenialAsTheDeadlinePasses: in all-or-nothing
// mode, a request denied by its second descriptor, whose deadline passes
// as the backend answers it, gives back what its first took: the refund of
// a denied request is made under a context that the deadline does not end.
func TestAllOrNothingRefundsADenialAsTheDeadlinePasses(t *testing.T) {
	s, ctx := deadlineServer(t, 1, true)
	b := entryOne("b")
	b.HitsAddend = wrapperspb.UInt64(2) // over b's 1
	resp, err := s.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a"), b}})
	require.NoError(t, err)
	require.Equal(t, over, resp.OverallCode)
	require.Error(t, ctx.Err(), "the deadline passed as b was answered")
	resp, err = s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{entryOne("a")}})
	require.NoError(t, err)
	assert.Equal(t, uint32(4), resp.Statuses[0].LimitRemaining, "the denied request's hit on a was given back: this one's is the first")
}

// leakyLimiter is a backend whose failures say where it lives, as a Redis
// client's dial errors do.
type leakyLimiter struct{ hotlimit.Limiter }

func (leakyLimiter) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return hotlimit.Decision{}, errors.New("dial tcp 10.9.8.7:6379: connect: connection refused")
}

// TestBackendFailureKeepsItsDetailsInTheLog: a request the backend fails
// gets Unavailable, over gRPC and from /json (503), without the backend's
// own error, which names its addresses; the server's log has it, with the
// rule.
func TestBackendFailureKeepsItsDetailsInTheLog(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		return leakyLimiter{lim}, err
	}
	logs := &lockedBuffer{}
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))), WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)

	_, err = s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{desc("ip", "1")}})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	assert.Contains(t, err.Error(), "rate limit backend failed (error)", "the kind of failure, as hotlimit_fallbacks_total names it")
	assert.NotContains(t, err.Error(), "10.9.8.7", "the client is not told where the backend lives")

	w := httptest.NewRecorder()
	s.JSONHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/json", strings.NewReader(`{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"1"}]}]}`)))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Contains(t, w.Body.String(), "rate limit backend")
	assert.NotContains(t, w.Body.String(), "10.9.8.7", "nor is an HTTP client")

	assert.Contains(t, logs.String(), "10.9.8.7", "the log has the backend's error")
	assert.Contains(t, logs.String(), "web.ip", "and the rule")
}

// TestFailurePoliciesAnswerWithoutLogging: README.md's "Redis" says that
// under -redis-failure error each failed request is a warning in the log
// ("msg":"rate limit backend failed", with the rule), and that under the
// three policies the requests they answer are not logged. With Redis down,
// a request gets Unavailable and one warning under the first, and each
// policy's answer and no log line under the others.
func TestFailurePoliciesAnswerWithoutLogging(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	require.NoError(t, client.Close()) // every call fails at once, as a Redis that is down
	for _, tc := range []struct {
		name   string
		errors bool // WithBackendErrors, -redis-failure error
		policy redislimit.FailPolicy
		code   pb.RateLimitResponse_Code
	}{
		{"error", true, redislimit.FailClosed, 0},
		{"local", false, redislimit.FailLocal, pb.RateLimitResponse_OK},
		{"open", false, redislimit.FailOpen, pb.RateLimitResponse_OK},
		{"closed", false, redislimit.FailClosed, pb.RateLimitResponse_OVER_LIMIT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))), WithBackendErrors(tc.errors),
				WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(tc.policy)))))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			for range 3 {
				resp, err := s.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{desc("ip", "1")}})
				if tc.errors {
					require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
					continue
				}
				require.NoError(t, err)
				assert.Equal(t, tc.code, resp.OverallCode)
			}
			if !tc.errors {
				assert.Empty(t, logs.String(), "the policy's answers are not logged")
				return
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			assert.Len(t, lines, 3, "one warning per failed request")
			for _, l := range lines {
				assert.Contains(t, l, `"level":"WARN"`)
				assert.Contains(t, l, `"msg":"rate limit backend failed"`)
				assert.Contains(t, l, `"rule":"web.ip"`)
			}
		})
	}
}
