package envoyrls

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// gatedServer is a Server of the rules of domain "m", in a directory of
// its own, over the gate's limiters, with a frozen clock and metrics,
// serving gRPC on 127.0.0.1:0.
type gatedServer struct {
	srv    *Server
	gate   *limitertest.Gate
	m      *Metrics
	reg    *prometheus.Registry
	dir    string
	client pb.RateLimitServiceClient
}

func newGatedServer(t *testing.T, rules string, opts ...Option) *gatedServer {
	t.Helper()
	gs := &gatedServer{gate: limitertest.NewGate(service.NewLimiter), m: NewMetrics(), reg: prometheus.NewPedanticRegistry(), dir: t.TempDir()}
	gs.write(t, rules)
	cfg, err := LoadDir(gs.dir)
	require.NoError(t, err)
	var now atomic.Int64
	now.Store(t0)
	gs.srv, err = New(cfg, append([]Option{WithClock(now.Load), WithLogger(slog.New(slog.DiscardHandler)), WithObserver(gs.m),
		WithLimiterOptions(hotlimit.WithFactory(gs.gate.Factory))}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, gs.reg.Register(gs.m))
	gs.client = serve(t, gs.srv)
	return gs
}

func (gs *gatedServer) write(t *testing.T, rules string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(gs.dir, "m.yaml"), []byte(rules), 0o644))
}

// call sends one request over gRPC of the descriptors ds of domain m.
func (gs *gatedServer) call(t *testing.T, ds ...*rlext.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	resp, err := gs.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: ds})
	require.NoError(t, err)
	return resp
}

// passed counts how many of n one-descriptor requests of d pass.
func (gs *gatedServer) passed(t *testing.T, n int, d *rlext.RateLimitDescriptor) int {
	t.Helper()
	c := 0
	for range n {
		if gs.call(t, d).OverallCode == ok {
			c++
		}
	}
	return c
}

// series returns the per-rule counters by rule key.
func (gs *gatedServer) series(t *testing.T) map[string]counts {
	t.Helper()
	ms := metricsServer{m: gs.m, reg: gs.reg}
	byKey, _ := ms.series(t)
	return byKey
}

func hourly(alg string, limit int) hotlimit.Config {
	var a hotlimit.Algorithm
	if err := a.UnmarshalText([]byte(alg)); err != nil {
		panic(err)
	}
	return hotlimit.Config{Algorithm: a, Limit: limit, Window: UnitDuration(pb.RateLimitResponse_RateLimit_HOUR)}
}

const (
	// reloadBefore has a rule that the next file keeps as it is, and one
	// whose limit it raises.
	reloadBefore = "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: TokenBucket}\n" +
		"  - key: changed\n    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: GCRA}\n"
	reloadAfter = "domain: m\ndescriptors:\n" +
		"  - key: kept\n    rate_limit: {unit: hour, requests_per_unit: 2, algorithm: TokenBucket}\n" +
		"  - key: changed\n    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: GCRA}\n"
)

// TestReloadDuringAGRPCRequestKeepsAnUnchangedRule: a gRPC request of a
// rule that the new file keeps as it is waits inside the rule's limiter
// while the directory is reloaded, then counts. It is counted once, in
// the limiter the new configuration uses: the client, who has then spent
// the rule's quota, gets no fresh window from the reload, and the rule's
// series counts each of its requests once.
func TestReloadDuringAGRPCRequestKeepsAnUnchangedRule(t *testing.T) {
	gs := newGatedServer(t, reloadBefore)
	kept := desc("kept", "client")
	require.Equal(t, ok, gs.call(t, kept).OverallCode, "the first of 2")

	gs.gate.HoldNext(hourly("TokenBucket", 2))
	held := make(chan *pb.RateLimitResponse)
	go func() {
		resp, _ := gs.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{kept}})
		held <- resp
	}()
	gs.gate.Entered(t) // chose the limiter, not yet counted
	gs.write(t, reloadAfter)
	require.NoError(t, gs.srv.ReloadDir(gs.dir))
	gs.gate.Release()
	resp := <-held
	require.NotNil(t, resp)
	assert.Equal(t, ok, resp.OverallCode, "the held request passes: the second of 2")

	assert.Zero(t, gs.passed(t, 3, kept), "the quota is spent: the reload gave no fresh window")
	assert.Len(t, gs.gate.Limiters(hourly("TokenBucket", 2)), 1, "one limiter across the reload")
	assert.Equal(t, counts{total: 5, within: 2, near: 1, over: 3}, gs.series(t)["m.kept"], "each request counted once")
}

// TestReloadDuringAGRPCRequestOfAChangedRule: a gRPC request of a rule
// whose limit the new file raises waits inside the old limit's limiter
// while the directory is reloaded. It is decided and counted under the old
// limit, where it started; the new limit starts afresh, as Reload
// documents (its limiter is new): its full quota passes, then no more.
func TestReloadDuringAGRPCRequestOfAChangedRule(t *testing.T) {
	gs := newGatedServer(t, reloadBefore)
	changed := desc("changed", "client")
	require.Equal(t, ok, gs.call(t, changed).OverallCode)

	gs.gate.HoldNext(hourly("GCRA", 2))
	held := make(chan *pb.RateLimitResponse)
	go func() {
		resp, _ := gs.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{changed}})
		held <- resp
	}()
	gs.gate.Entered(t)
	gs.write(t, reloadAfter)
	require.NoError(t, gs.srv.ReloadDir(gs.dir))
	gs.gate.Release()
	resp := <-held
	require.NotNil(t, resp)
	assert.Equal(t, ok, resp.OverallCode)
	assert.Equal(t, uint32(2), resp.Statuses[0].CurrentLimit.GetRequestsPerUnit(), "decided under the rules it started with")

	assert.Equal(t, 3, gs.passed(t, 5, changed), "the new limit, afresh")
	require.Len(t, gs.gate.Limiters(hourly("GCRA", 3)), 1)
	assert.Equal(t, counts{total: 7, within: 5, near: 2, over: 2}, gs.series(t)["m.changed"],
		"one series across the change of limit, each request counted once")
}

// TestReloadBetweenATakeAndItsRefund: in all-or-nothing mode, a request of
// two descriptors has taken from the first rule's limiter and waits inside
// the second's when a reload changes the first rule's limit. The second
// denies; the refund of the first must reach the limiter that took, which
// the new configuration no longer uses, and not the new rule's limiter,
// where the client has taken meanwhile.
func TestReloadBetweenATakeAndItsRefund(t *testing.T) {
	before := "domain: m\ndescriptors:\n" +
		"  - key: first\n    rate_limit: {unit: hour, requests_per_unit: 5, algorithm: TokenBucket}\n" +
		"  - key: second\n    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: FixedWindow}\n"
	after := "domain: m\ndescriptors:\n" +
		"  - key: first\n    rate_limit: {unit: hour, requests_per_unit: 3, algorithm: TokenBucket}\n" +
		"  - key: second\n    rate_limit: {unit: hour, requests_per_unit: 1, algorithm: FixedWindow}\n"
	gs := newGatedServer(t, before, WithAllOrNothing(true))
	first, second := desc("first", "c"), desc("second", "c")
	require.Equal(t, ok, gs.call(t, second).OverallCode, "spends the second rule's one request")

	gs.gate.HoldNext(hourly("FixedWindow", 1))
	held := make(chan *pb.RateLimitResponse)
	go func() {
		resp, _ := gs.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{first, second}})
		held <- resp
	}()
	gs.gate.Entered(t) // the first took, the second about to deny
	gs.write(t, after)
	require.NoError(t, gs.srv.ReloadDir(gs.dir))
	require.Equal(t, ok, gs.call(t, first).OverallCode, "one of the new limit's 3")
	gs.gate.Release()
	resp := <-held
	require.NotNil(t, resp)
	assert.Equal(t, over, resp.OverallCode)

	old, next := gs.gate.Limiters(hourly("TokenBucket", 5)), gs.gate.Limiters(hourly("TokenBucket", 3))
	require.Len(t, old, 1)
	require.Len(t, next, 1)
	assert.EqualValues(t, 1, old[0].Refunded.Load(), "given back to the limiter that took")
	assert.Zero(t, next[0].Refunded.Load(), "nothing given to the new one")
	assert.Equal(t, 2, gs.passed(t, 4, first), "the new limit's last 2: the refund created nothing there")
}

// TestReloadSpellingOutTheBurstKeepsState: a burst equal to the one a
// burst of 0 stands for (the limit, or the limiters' default burst given
// by WithLimiterOptions(hotlimit.WithBurst(n))) is the same policy: a
// reload that only spells it out, or drops it, keeps the rule's limiter,
// and the client that spent the quota gets no fresh window. With a default
// burst, spelling it out built a new limiter, and every key started fresh.
func TestReloadSpellingOutTheBurstKeepsState(t *testing.T) {
	for _, alg := range []string{"TokenBucket", "GCRA"} {
		for _, tc := range []struct {
			name     string
			opts     []Option
			burst    int // what a burst of 0 stands for
			elsewise int // a burst that is not it
		}{
			{"default=none", nil, 3, 4},
			{"default=5", []Option{WithLimiterOptions(hotlimit.WithBurst(5))}, 5, 3},
		} {
			t.Run(alg+"/"+tc.name, func(t *testing.T) {
				rules := func(burst int) string {
					b := ""
					if burst > 0 {
						b = ", burst: " + strconv.Itoa(burst)
					}
					return "domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 3" + b + ", algorithm: " + alg + "}\n"
				}
				gs := newGatedServer(t, rules(0), tc.opts...)
				d := desc("k", "client")
				require.Equal(t, tc.burst, gs.passed(t, tc.burst+1, d))

				gs.write(t, rules(tc.burst))
				require.NoError(t, gs.srv.ReloadDir(gs.dir))
				assert.Zero(t, gs.passed(t, tc.burst, d), "the burst spelled out: still spent")
				gs.write(t, rules(0))
				require.NoError(t, gs.srv.ReloadDir(gs.dir))
				assert.Zero(t, gs.passed(t, tc.burst, d), "and dropped again: still spent")
				assert.Len(t, gs.gate.Configs(), 1, "one limiter throughout")

				gs.write(t, rules(tc.elsewise))
				require.NoError(t, gs.srv.ReloadDir(gs.dir))
				assert.Equal(t, tc.elsewise, gs.passed(t, tc.elsewise+1, d), "another burst is another limiter")
			})
		}
	}
}

// TestWatchDirLeavesNoGoroutine: WatchDir, having reloaded a change,
// returns once its context ends, and leaves no goroutine behind.
func TestWatchDirLeavesNoGoroutine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "m.yaml")
	require.NoError(t, os.WriteFile(file, []byte(reloadBefore), 0o644))
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	srv, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler))) // no gRPC: its goroutines come and go
	require.NoError(t, err)
	base := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	loads := make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.WatchDir(ctx, dir, time.Millisecond, func(err error) { loads <- err })
	}()
	tmp := filepath.Join(dir, ".m.yaml.tmp") // hidden: not read
	require.NoError(t, os.WriteFile(tmp, []byte(reloadAfter), 0o644))
	require.NoError(t, os.Rename(tmp, file)) // whole: no poll reads it half written
	require.NoError(t, <-loads)
	cancel()
	<-done
	// done is closed as the goroutine returns: let it finish returning.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > base && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), base)
}

// TestReloadOfARuleModeKeepsState: a reload that changes only how a
// rule's decisions are answered or named (shadow mode, quota mode,
// detailed metric, its name), or its unit spelled as a window, keeps its
// limiter: the client that spent the quota gets no fresh window.
func TestReloadOfARuleModeKeepsState(t *testing.T) {
	const head = "domain: m\ndescriptors:\n  - key: k\n"
	plain := head + "    rate_limit: {unit: hour, requests_per_unit: 3}\n"
	versions := []string{
		head + "    shadow_mode: true\n    rate_limit: {unit: hour, requests_per_unit: 3}\n",
		head + "    quota_mode: true\n    rate_limit: {unit: hour, requests_per_unit: 3}\n",
		head + "    detailed_metric: true\n    rate_limit: {unit: hour, requests_per_unit: 3}\n",
		head + "    rate_limit: {unit: hour, requests_per_unit: 3, name: named}\n",
		head + "    rate_limit: {window: 60m, requests_per_unit: 3}\n",
		plain,
	}
	gs := newGatedServer(t, plain)
	d := desc("k", "client")
	require.Equal(t, 3, gs.passed(t, 4, d))
	for i, v := range versions {
		gs.write(t, v)
		require.NoError(t, gs.srv.ReloadDir(gs.dir))
		resp := gs.call(t, d)
		assert.Zero(t, resp.Statuses[0].LimitRemaining, "version %d: still spent", i)
		if !strings.Contains(v, "_mode") {
			assert.Equal(t, over, resp.OverallCode, "version %d", i)
		}
	}
	assert.Len(t, gs.gate.Configs(), 1, "one limiter throughout")
}
