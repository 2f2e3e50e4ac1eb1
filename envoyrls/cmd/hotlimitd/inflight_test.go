package main

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// holdingProxy forwards connections to the Redis at target. Once hold is
// called, what Redis answers is kept back, on every connection, until
// release: Redis has done what it was asked, and the client waits for the
// answer. held is closed when the first answer is kept back.
type holdingProxy struct {
	addr string
	held chan struct{}

	mu      sync.Mutex
	holding bool
	kept    []keptWrite
}

// keptWrite is an answer of Redis kept back, for the connection dst.
type keptWrite struct {
	dst net.Conn
	b   []byte
}

func (p *holdingProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = true
}

// release sends what was kept back, in order, and forwards the answers
// that follow as they come.
func (p *holdingProxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.kept {
		_, _ = w.dst.Write(w.b) // the client may have closed the connection
	}
	p.kept, p.holding = nil, false
}

// keep keeps b back for dst and reports true while the proxy holds.
func (p *holdingProxy) keep(dst net.Conn, b []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holding {
		return false
	}
	if p.kept == nil {
		close(p.held)
	}
	p.kept = append(p.kept, keptWrite{dst, append([]byte(nil), b...)})
	return true
}

func newHoldingProxy(t *testing.T, target string) *holdingProxy {
	p := &holdingProxy{held: make(chan struct{})}
	p.addr = startProxy(t, target, func(dst net.Conn, b []byte, answer bool) bool {
		return answer && p.keep(dst, b)
	})
	return p
}

// setHooks sets the hooks of run's wait for the requests in flight for the
// test, and restores them after it.
func setHooks(t *testing.T, waiting func(int64), bound func(time.Duration) <-chan time.Time) {
	savedWaiting, savedBound := waitingForHandlers, afterBound
	t.Cleanup(func() { waitingForHandlers, afterBound = savedWaiting, savedBound })
	waitingForHandlers, afterBound = waiting, bound
}

// breakableListen replaces listen for the test with one whose listeners,
// sent on the channel it returns in the order run opens them (gRPC's,
// then HTTP's), can be broken.
func breakableListen(t *testing.T) <-chan *breakingListener {
	saved := listen
	t.Cleanup(func() { listen = saved })
	lis := make(chan *breakingListener, 2)
	listen = func(network, addr string) (net.Listener, error) {
		l, err := saved(network, addr)
		if err != nil {
			return l, err
		}
		b := &breakingListener{Listener: l}
		lis <- b
		return b, nil
	}
	return lis
}

// takeAhead is a request of key ip, on a rule of 3 an hour with -redis-lease
// 2: Redis counts its own hit and a lease of 2 more, the whole limit.
func takeAhead(value string) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: value}},
	}}}
}

// TestCutRequestsGiveTheirLeasesBack: a request still waiting for Redis's
// answer when the servers are cut (a server's failure, or the -drain bound
// reached) is waited for before the leases are given back and the Redis
// client closed: the lease Redis granted it is given back, not lost until
// its window ends. Redis's answer is kept back until run waits for the
// request; without that wait, run closes the client first and the answer
// finds it closed.
func TestCutRequestsGiveTheirLeasesBack(t *testing.T) {
	for _, tc := range []struct {
		name    string
		http    bool
		json    bool // the request in flight is a /json one, not gRPC
		drain   bool // cut by a drain with -drain 0, not a server's failure
		broken  int  // the listener that fails: 0 gRPC's, 1 HTTP's
		wantErr string
	}{
		{name: "gRPC server fails, gRPC call", broken: 0, wantErr: "grpc server: accept: the socket is gone"},
		{name: "HTTP server fails, /json request", http: true, json: true, broken: 1, wantErr: "http server: accept: the socket is gone"},
		{name: "drain bound reached, gRPC call", http: true, drain: true},
		{name: "drain bound reached, /json request", http: true, json: true, drain: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisAddr, _ := startRedis(t, "")
			proxy := newHoldingProxy(t, redisAddr)
			dir := t.TempDir()
			writeRule(t, dir, "3")
			prefix := t.Name() + ":"
			waited := make(chan int64, 1)
			setHooks(t, func(running int64) {
				waited <- running
				proxy.release()
			}, func(time.Duration) <-chan time.Time { return nil }) // no bound: the request returns
			lis := breakableListen(t)
			httpAddr := ""
			if tc.http {
				httpAddr = "127.0.0.1:0"
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			addrs := make(chan [2]string, 1)
			go func() {
				done <- run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", httpAddr, "-redis", proxy.addr, "-drain", "0",
					"-redis-lease", "2", "-redis-lease-ttl", "1h", "-redis-prefix", prefix, "-redis-timeout", "10s"},
					io.Discard, func(g, h string) { addrs <- [2]string{g, h} })
			}()
			var a [2]string
			select {
			case a = <-addrs:
			case err := <-done:
				t.Fatalf("run: %v", err)
			}
			conn, err := grpc.NewClient(a[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close() })
			// Another key first: the script is loaded and a connection
			// open, so that the answer kept back is the take's.
			resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), takeAhead("b"))
			require.NoError(t, err)
			require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)

			proxy.hold()
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				if tc.json {
					res, err := http.Post("http://"+a[1]+"/json", "application/json",
						strings.NewReader(`{"domain":"web","descriptors":[{"entries":[{"key":"ip","value":"a"}]}]}`))
					if err == nil {
						_ = res.Body.Close()
					}
					return
				}
				_, _ = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), takeAhead("a"))
			}()
			select {
			case <-proxy.held:
			case <-time.After(10 * time.Second):
				t.Fatal("the request did not reach Redis")
			}
			l0 := <-lis
			var broken *breakingListener
			if tc.broken == 0 {
				broken = l0
			} else {
				broken = <-lis
			}
			if tc.drain {
				cancel()
			} else {
				broken.breakNow()
			}
			select {
			case err := <-done:
				if tc.wantErr != "" {
					require.ErrorContains(t, err, tc.wantErr)
				} else {
					require.NoError(t, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("run did not return")
			}
			select {
			case running := <-waited:
				assert.Equal(t, int64(1), running, "the request waiting for Redis")
			default:
				t.Error("run did not wait for the request in flight")
			}
			<-answered

			next := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", redisAddr, "-redis-prefix", prefix, "-redis-timeout", "10s"}, io.Discard)
			passed := 0
			for range 3 {
				resp, err := pb.NewRateLimitServiceClient(next.conn).ShouldRateLimit(context.Background(), takeAhead("a"))
				require.NoError(t, err)
				if resp.OverallCode == pb.RateLimitResponse_OK {
					passed++
				}
			}
			assert.Equal(t, 2, passed, "3 an hour, less the one request the cut one took, not its lease")
			next.stop(t)
		})
	}
}

// TestCutRequestsWaitIsBounded: a request whose Redis never answers holds
// up the way out only until the bound (the longer of -redis-timeout and
// 5 s, here reached at once), with a warning that names how many were
// still running; run then returns.
func TestCutRequestsWaitIsBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		timeout   string
		wantBound time.Duration
	}{
		{name: "no -redis-timeout", timeout: "0", wantBound: 5 * time.Second},
		{name: "-redis-timeout past 5s", timeout: "7s", wantBound: 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			redisAddr, _ := startRedis(t, "")
			proxy := newHoldingProxy(t, redisAddr)
			dir := t.TempDir()
			writeRule(t, dir, "3")
			bounds := make(chan time.Duration, 1)
			setHooks(t, nil, func(d time.Duration) <-chan time.Time {
				bounds <- d
				reached := make(chan time.Time)
				close(reached)
				return reached
			})
			var logs redisproc.SyncBuffer
			srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", proxy.addr, "-drain", "0",
				"-redis-lease", "2", "-redis-lease-ttl", "1h", "-redis-prefix", t.Name() + ":", "-redis-timeout", tc.timeout}, &logs)
			resp, err := pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), takeAhead("b"))
			require.NoError(t, err)
			require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)

			proxy.hold() // and never released: Redis does not answer
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				_, _ = pb.NewRateLimitServiceClient(srv.conn).ShouldRateLimit(context.Background(), takeAhead("a"))
			}()
			select {
			case <-proxy.held:
			case <-time.After(10 * time.Second):
				t.Fatal("the request did not reach Redis")
			}
			srv.stop(t)
			select {
			case d := <-bounds:
				assert.Equal(t, tc.wantBound, d)
			default:
				t.Fatal("run did not wait for the request in flight")
			}
			assert.Contains(t, logs.String(), `"msg":"requests still being decided past the bound, their leases may be lost","running":1,"bound":"`+tc.wantBound.String()+`"`)
			<-answered
		})
	}
}

// TestInFlight: close waits for the requests counted until the last
// leaves, or until the bound, and refuses those that come after it.
func TestInFlight(t *testing.T) {
	var never chan time.Time
	reached := make(chan time.Time)
	close(reached)
	t.Run("none running", func(t *testing.T) {
		g := newInFlight()
		require.True(t, g.enter())
		g.leave()
		running, expired := g.close(never)
		assert.Equal(t, int64(0), running)
		assert.False(t, expired)
		assert.False(t, g.enter(), "refused after close")
	})
	t.Run("the last leaves", func(t *testing.T) {
		g := newInFlight()
		require.True(t, g.enter())
		require.True(t, g.enter())
		setHooks(t, func(running int64) {
			assert.Equal(t, int64(2), running)
			assert.False(t, g.enter(), "refused once close has begun")
			g.leave()
			go g.leave() // the other, as a handler's goroutine
		}, afterBound)
		running, expired := g.close(never)
		assert.Equal(t, int64(0), running)
		assert.False(t, expired)
	})
	t.Run("bound reached", func(t *testing.T) {
		g := newInFlight()
		require.True(t, g.enter())
		running, expired := g.close(reached)
		assert.Equal(t, int64(1), running)
		assert.True(t, expired, "bound's value taken: giveBack must not wait on it again")
		g.leave() // after close gave up: no one waits, nothing blocks
	})
	t.Run("bound reached as the last leaves", func(t *testing.T) {
		g := newInFlight()
		require.True(t, g.enter())
		bound := make(chan time.Time, 1)
		bound <- time.Time{} // as time.After's one value
		setHooks(t, func(int64) {
			g.leave()
			// Both are ready as close chooses: it takes the bound's
			// value, as select may.
			<-g.idle
		}, afterBound)
		running, expired := g.close(bound)
		assert.Equal(t, int64(0), running)
		assert.True(t, expired, "bound's value taken with none running: giveBack must not wait on it again")
		assert.Empty(t, bound, "the bound's one value is gone")
	})
}

// TestCountedServiceAllocatesNothing: counting a call in flight adds no
// allocation to the decision's own. Both are called as gRPC calls them:
// through the service's method handler, with the service as registered
// (an interface value, the wrapper boxed once, at registration).
func TestCountedServiceAllocatesNothing(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "4000000")
	cfg, err := envoyrls.LoadDir(dir)
	require.NoError(t, err)
	srv, err := envoyrls.New(cfg)
	require.NoError(t, err)
	require.Len(t, pb.RateLimitService_ServiceDesc.Methods, 1)
	handler := pb.RateLimitService_ServiceDesc.Methods[0].Handler
	req := takeAhead("a")
	ctx := context.Background()
	dec := func(v any) error { proto.Merge(v.(proto.Message), req); return nil }
	// the least of three measurements: an allocation of the runtime's or
	// another goroutine's counts in the one it falls in
	call := func(impl any) float64 {
		least := math.Inf(1)
		for range 3 {
			least = min(least, testing.AllocsPerRun(100, func() {
				_, err := handler(impl, ctx, dec, nil)
				require.NoError(t, err)
			}))
		}
		return least
	}
	plain := call(srv)
	got := call(countedService{Server: srv, calls: newInFlight()})
	assert.Equal(t, plain, got)
}
