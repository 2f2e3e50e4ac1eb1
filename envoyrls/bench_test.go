package envoyrls

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
)

// okServer answers OK to every descriptor without deciding: the cost of
// gRPC itself, which the memory backend is measured against.
type okServer struct {
	pb.UnimplementedRateLimitServiceServer
}

func (okServer) ShouldRateLimit(_ context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(req.Descriptors))}
	for i := range resp.Statuses {
		resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
	}
	return resp, nil
}

// serveBench serves srv on loopback and returns its address.
func serveBench(b *testing.B, srv pb.RateLimitServiceServer) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	g := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	b.Cleanup(g.Stop)
	return lis.Addr().String()
}

// benchDescriptors builds the descriptors of client c's request k: the
// first holds two entries, (client, ip), counted per (client, ip); the
// next ones, when descriptors > 1, count per client and per route, so that
// every descriptor of a request is decided by a rule of its own.
func benchDescriptors(run string, c, k, descriptors int) []*rlext.RateLimitDescriptor {
	client := run + strconv.Itoa(c)
	ds := []*rlext.RateLimitDescriptor{{
		Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "client", Value: client}, {Key: "ip", Value: strconv.Itoa(k)}},
	}}
	if descriptors > 1 {
		ds = append(ds, &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "client", Value: client}}})
	}
	for i := 2; i < descriptors; i++ {
		ds = append(ds, &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "route", Value: "/r" + strconv.Itoa(i) + "/" + strconv.Itoa(k%16)}}})
	}
	return ds
}

// benchLoad is one measurement of BenchmarkShouldRateLimit: concurrent
// clients, each on its own connection, and descriptors per request.
type benchLoad struct{ clients, descriptors int }

// BenchmarkShouldRateLimit measures ShouldRateLimit per second over loopback
// gRPC, each client on its own connection as Envoy's workers are, over 1024
// keys per client:
//
//   - impl=ok: an in-process handler that answers OK without deciding, the
//     cost of gRPC itself, which the memory backend is measured against;
//   - impl=memory: hotlimitd's server in process, state in memory;
//   - impl=redis: the same on Redis, on a redis-server the benchmark starts
//     (skipped without one), or at HOTLIMITD_BENCH_REDIS;
//   - impl=hotlimitd: with HOTLIMITD_BENCH_HOTLIMITD set to the path of
//     hotlimitd's binary, that command started by the benchmark on the same
//     Redis, a process of its own as the reference's is;
//   - impl=hotlimitd-memory: the same command with its state in memory, no
//     Redis: what a request costs when only gRPC and the process boundary
//     are left, the floor of impl=hotlimitd;
//   - impl=reference: with HOTLIMITD_BENCH_REFERENCE set to the path of the
//     reference server's binary (envoyproxy/ratelimit's src/service_cmd),
//     that server, started by the benchmark on the same Redis;
//   - impl=external: with HOTLIMITD_BENCH_ADDR set, the rate limit service
//     at that address, which must have testdata/bench as its configuration.
//
// Requests hold one descriptor of two entries with 1, 16 and 64 clients,
// and three descriptors of three rules with 16 clients. Besides req/s, it
// reports cpu-us/req, the CPU time per request of the clients, the server
// and the Redis it started, and each process's share of it: bench-us/req
// (the clients, and the server when in process), server-us/req and
// redis-us/req (see measure). bench.sh (make envoybench) runs
// it in rounds and compares the impls within each round, the same moment of
// a loaded machine.
func BenchmarkShouldRateLimit(b *testing.B) {
	cfg, err := LoadDir("testdata/bench")
	require.NoError(b, err)
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	// One redis-server per round, shared by every impl on Redis, and one
	// process of each server binary, started when the first of their impls
	// runs; b's cleanup stops them.
	var redisAddr string
	var redisPid int
	sharedRedis := func(sub *testing.B) (string, int) {
		if redisAddr == "" {
			redisAddr = os.Getenv("HOTLIMITD_BENCH_REDIS")
		}
		if redisAddr == "" {
			if _, err := exec.LookPath("redis-server"); err != nil {
				sub.Skip("redis-server not installed")
			}
			redisAddr, redisPid = benchRedis(b)
		}
		return redisAddr, redisPid
	}
	procs := map[string]benchTarget{}
	process := func(sub *testing.B, name string, start func(redisAddr string) (string, int)) benchTarget {
		if t, ok := procs[name]; ok {
			return t
		}
		addr, redisPid := sharedRedis(sub)
		srv, pid := start(addr)
		t := benchTarget{srv, pid, redisPid}
		procs[name] = t
		return t
	}
	type impl struct {
		name string
		make func(b *testing.B) benchTarget
	}
	impls := []impl{
		{"ok", func(b *testing.B) benchTarget { return benchTarget{addr: serveBench(b, okServer{})} }},
		{"memory", func(b *testing.B) benchTarget {
			s, err := New(cfg, quiet)
			require.NoError(b, err)
			return benchTarget{addr: serveBench(b, s)}
		}},
		{"redis", func(b *testing.B) benchTarget {
			addr, redisPid := sharedRedis(b)
			client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64})
			b.Cleanup(func() { _ = client.Close() })
			s, err := New(cfg, quiet, WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(time.Second)))))
			require.NoError(b, err)
			return benchTarget{addr: serveBench(b, s), redis: redisPid}
		}},
	}
	if bin := os.Getenv("HOTLIMITD_BENCH_HOTLIMITD"); bin != "" {
		impls = append(impls, impl{"hotlimitd", func(sub *testing.B) benchTarget {
			return process(sub, "hotlimitd", func(redisAddr string) (string, int) { return startHotlimitd(b, bin, redisAddr) })
		}})
	}
	if bin := os.Getenv("HOTLIMITD_BENCH_HOTLIMITD"); bin != "" {
		impls = append(impls, impl{"hotlimitd-memory", func(sub *testing.B) benchTarget {
			if t, ok := procs["hotlimitd-memory"]; ok {
				return t
			}
			addr, pid := startHotlimitd(b, bin, "")
			t := benchTarget{addr: addr, server: pid}
			procs["hotlimitd-memory"] = t
			return t
		}})
	}
	if bin := os.Getenv("HOTLIMITD_BENCH_REFERENCE"); bin != "" {
		impls = append(impls, impl{"reference", func(sub *testing.B) benchTarget {
			return process(sub, "reference", func(redisAddr string) (string, int) { return startReference(b, bin, redisAddr) })
		}})
	}
	if addr := os.Getenv("HOTLIMITD_BENCH_ADDR"); addr != "" {
		impls = append(impls, impl{"external", func(*testing.B) benchTarget { return benchTarget{addr: addr} }})
	}
	loads := []benchLoad{{1, 1}, {16, 1}, {64, 1}, {16, 3}}
	for _, impl := range impls {
		for _, load := range loads {
			b.Run(fmt.Sprintf("impl=%s/clients=%d/descriptors=%d", impl.name, load.clients, load.descriptors), func(b *testing.B) {
				measure(b, impl.make(b), load)
			})
		}
	}
}

// benchTarget is a server to measure: its gRPC address, and the processes
// besides the benchmark's own that serve it, whose CPU time counts: the
// server's when it runs apart, redis-server's when it uses one (0: none).
type benchTarget struct {
	addr          string
	server, redis int
}

// measure sends b.N requests of load to target and reports req/s and the
// CPU time per request of the benchmark's process (the clients, and the
// server when in process) and of the target's processes (cpu-us/req), which
// a machine shared with other work distorts less than req/s: on a machine
// whose CPUs are all busy, req/s goes as its inverse.
func measure(b *testing.B, target benchTarget, load benchLoad) {
	stubs := make([]pb.RateLimitServiceClient, load.clients)
	for i := range stubs {
		stubs[i] = dial(b, target.addr)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36) // fresh keys on a server that outlives the run
	reqs := make([][]*pb.RateLimitRequest, load.clients)
	for c := range reqs {
		for k := range 1024 {
			reqs[c] = append(reqs[c], &pb.RateLimitRequest{Domain: "bench", Descriptors: benchDescriptors(run, c, k, load.descriptors)})
		}
	}
	require.Len(b, reqs[load.clients-1], 1024)
	require.Len(b, reqs[0][0].Descriptors, load.descriptors)
	// Warm up each connection and check the fixture decides: every
	// descriptor is under a limit, and OK.
	for c := range stubs {
		resp, err := stubs[c].ShouldRateLimit(context.Background(), reqs[c][0])
		require.NoError(b, err)
		require.Equal(b, pb.RateLimitResponse_OK, resp.OverallCode)
		require.Len(b, resp.Statuses, load.descriptors)
		if !strings.Contains(b.Name(), "impl=ok/") {
			for i, st := range resp.Statuses {
				require.NotNil(b, st.CurrentLimit, "descriptor %d matches no rule", i)
			}
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var pids []int
	names := []string{"bench-us/req"}
	if target.server != 0 {
		pids, names = append(pids, target.server), append(names, "server-us/req")
	}
	if target.redis != 0 {
		pids, names = append(pids, target.redis), append(names, "redis-us/req")
	}
	cpu0, cpuOK := cpuTimes(pids)
	b.ResetTimer()
	start := time.Now()
	for c := range load.clients {
		wg.Go(func() {
			for i := 0; next.Add(1) <= int64(b.N); i++ {
				if _, err := stubs[c].ShouldRateLimit(context.Background(), reqs[c][i%1024]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	cpu1, ok := cpuTimes(pids)
	if !ok || !cpuOK {
		return
	}
	// Each process's share, and their sum: the benchmark's own (the
	// clients, and the server when in process), the server's, Redis's.
	var total time.Duration
	for i := range cpu1 {
		d := cpu1[i] - cpu0[i]
		total += d
		b.ReportMetric(float64(d)/float64(time.Microsecond)/float64(b.N), names[i])
	}
	b.ReportMetric(float64(total)/float64(time.Microsecond)/float64(b.N), "cpu-us/req")
}

// startReference starts the reference server's binary bin on loopback, with
// testdata/bench as its configuration and its state on the Redis at
// redisAddr, until b's cleanup; it returns its gRPC address once it answers.
func startReference(b testing.TB, bin, redisAddr string) (string, int) {
	ref := launchReference(b, bin, redisAddr, "testdata/bench", "", false)
	awaitBenchConfig(b, ref.grpc, "the reference server "+bin, ref.log)
	return ref.grpc, ref.cmd.Process.Pid
}

// reference is a started reference server: its process, log, and
// loopback addresses.
type reference struct {
	cmd        *exec.Cmd
	log        *redisproc.SyncBuffer
	grpc, prom string // prom is empty without Prometheus stats
	http       string // /json and /healthcheck
}

// launchReference starts the reference server's binary bin on loopback,
// until tb's cleanup, with the files of dir as its configuration and its
// state on the Redis at redisAddr, under keys that begin with prefix (its
// default when empty), with its stats in Prometheus form flushed every
// 100 ms when prometheus is set, and env added to its environment. It
// returns once the server listens, on ports of its own, and does not wait
// for it to answer.
//
// The reference cannot say which port it bound when given port 0, so it is
// given ports found free, which another process may take before it binds
// them: then it ends (gRPC and HTTP), or shares them under SO_REUSEPORT
// (its listeners set it) with another reference server, or goes on without
// its Prometheus endpoint (whose failure it ignores), and whatever holds
// the port answers in its place. So each attempt is checked: until the
// server listens on each port and it alone does (see heldBy, which needs
// Linux's /proc; elsewhere the first attempt is taken unchecked),
// or another attempt on other ports follows. Its debug listener, which no
// test reads, is on port 0.
func launchReference(tb testing.TB, bin, redisAddr, dir, prefix string, prometheus bool, env ...string) reference {
	tb.Helper()
	root := tb.TempDir()
	conf := filepath.Join(root, "rt", "config")
	require.NoError(tb, os.MkdirAll(conf, 0o755))
	ents, err := os.ReadDir(dir)
	require.NoError(tb, err)
	for _, e := range ents {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(tb, err)
		require.NoError(tb, os.WriteFile(filepath.Join(conf, e.Name()), data, 0o644))
	}
	var failures []string
	for range listenAttempts {
		ref, err := launchReferenceOnce(tb, bin, root, redisAddr, prefix, prometheus, env)
		if err == nil {
			return ref
		}
		failures = append(failures, err.Error())
	}
	tb.Fatalf("the reference server %s did not listen on ports of its own in %d attempts:\n%s", bin, listenAttempts, strings.Join(failures, "\n"))
	return reference{}
}

// listenAttempts bounds the ports a test server is started on before the
// test gives up.
const listenAttempts = 5

// launchReferenceOnce is one attempt of launchReference, with its
// configuration under root: an error when the server ended before it
// listened or another process listens on one of its ports; the server is
// stopped then.
func launchReferenceOnce(tb testing.TB, bin, root, redisAddr, prefix string, prometheus bool, env []string) (reference, error) {
	n := 2 // gRPC, HTTP
	if prometheus {
		n++
	}
	ports := make([]int, n)
	for i := range ports {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(tb, err)
		ports[i] = lis.Addr().(*net.TCPAddr).Port
		require.NoError(tb, lis.Close())
	}
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	cmd := exec.Command(bin)
	cmd.SysProcAttr = childproc.Attr() // it dies with the test binary
	cmd.Env = append(os.Environ(),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr, "USE_STATSD=false", "LOG_LEVEL=warn",
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=rt", "RUNTIME_APPDIRECTORY=config", "RUNTIME_WATCH_ROOT=false",
		"GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(ports[0]), "HOST=127.0.0.1", "PORT="+strconv.Itoa(ports[1]),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT=0")
	if prefix != "" {
		cmd.Env = append(cmd.Env, "CACHE_KEY_PREFIX="+prefix)
	}
	ref := reference{cmd: cmd, log: new(redisproc.SyncBuffer), grpc: addr(ports[0]), http: addr(ports[1])}
	if prometheus {
		cmd.Env = append(cmd.Env, "USE_PROMETHEUS=true", "PROMETHEUS_ADDR="+addr(ports[2]), "STATS_FLUSH_INTERVAL=100ms")
		ref.prom = addr(ports[2])
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = ref.log, ref.log // written by the command's copying goroutines
	require.NoError(tb, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }
	if err := awaitListening(cmd.Process.Pid, exited, ports); err != nil {
		stop()
		return reference{}, fmt.Errorf("ports %v: %w; its log:\n%s", ports, err, ref.log.String())
	}
	tb.Cleanup(stop)
	return ref, nil
}

// awaitListening waits up to 20 s for process pid to listen on each of
// ports, alone, and returns nil once it does, or at once where the
// listeners' owners cannot be told (errNoProcNet); an error when another
// process listens on one of them, when the process ends first (exited is
// closed) or in 20 s.
func awaitListening(pid int, exited <-chan struct{}, ports []int) error {
	tick := time.NewTicker(10 * time.Millisecond) // polling, with a deadline
	defer tick.Stop()
	deadline := time.After(20 * time.Second)
	for {
		held, err := heldBy(pid, ports...)
		switch {
		case errors.Is(err, errNoProcNet):
			return nil
		case err != nil:
			return err
		case held:
			return nil
		}
		select {
		case <-exited:
			return errors.New("it ended before it listened")
		case <-deadline:
			return errors.New("it did not listen within 20 s")
		case <-tick.C:
		}
	}
}

// hotlimitdProc is hotlimitd's command started by startHotlimitdProc: its
// addresses, process and log.
type hotlimitdProc struct {
	grpc, http string // http is empty when it serves none
	pid        int
	log        *redisproc.SyncBuffer
}

// startHotlimitdProc starts hotlimitd's binary bin (built from
// ./cmd/hotlimitd) with args, until tb's cleanup, on ports of its own:
// with -grpc, and -http when withHTTP (else -http ""), 127.0.0.1:0, which
// it binds itself, so that no other process can hold them; it returns the
// addresses its "serving" log line names, once it logs it (it is given
// -log-level info after args).
func startHotlimitdProc(tb testing.TB, bin string, withHTTP bool, args ...string) hotlimitdProc {
	tb.Helper()
	httpAddr := ""
	if withHTTP {
		httpAddr = "127.0.0.1:0"
	}
	cmd := exec.Command(bin, append(args, "-grpc", "127.0.0.1:0", "-http", httpAddr, "-log-level", "info")...)
	cmd.SysProcAttr = childproc.Attr() // it dies with the test binary
	log := new(redisproc.SyncBuffer)
	served := make(chan map[string]any, 1)
	cmd.Stdout, cmd.Stderr = log, &servingWatch{log: log, served: served} // written by the command's copying goroutines
	require.NoError(tb, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	tb.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	select {
	case rec := <-served:
		p := hotlimitdProc{pid: cmd.Process.Pid, log: log}
		p.grpc, _ = rec["grpc"].(string)
		p.http, _ = rec["http"].(string)
		require.NotEmpty(tb, p.grpc, "hotlimitd %s named no gRPC address:\n%s", bin, log.String())
		require.Equal(tb, withHTTP, p.http != "", "hotlimitd %s: HTTP address %q:\n%s", bin, p.http, log.String())
		return p
	case <-exited:
		tb.Fatalf("hotlimitd %s ended before it served:\n%s", bin, log.String())
	case <-time.After(30 * time.Second):
		tb.Fatalf("hotlimitd %s did not serve within 30 s:\n%s", bin, log.String())
	}
	return hotlimitdProc{}
}

// servingWatch is the standard error of a command started by
// startHotlimitdProc: it keeps what the command writes in log and sends
// the first record of its JSON log whose msg is "serving" on served.
type servingWatch struct {
	log     *redisproc.SyncBuffer
	served  chan<- map[string]any // of capacity 1
	sent    bool
	partial []byte // a line not yet ended
}

// Write is called by the command's one copying goroutine, never
// concurrently.
func (w *servingWatch) Write(p []byte) (int, error) {
	_, _ = w.log.Write(p)
	w.partial = append(w.partial, p...)
	for {
		line, rest, found := bytes.Cut(w.partial, []byte("\n"))
		if !found {
			break
		}
		w.partial = rest
		var rec map[string]any
		if !w.sent && json.Unmarshal(line, &rec) == nil && rec["msg"] == "serving" {
			w.sent = true
			w.served <- rec
		}
	}
	return len(p), nil
}

// startHotlimitd starts hotlimitd's binary bin (built from ./cmd/hotlimitd)
// on loopback with testdata/bench and its state on the Redis at redisAddr
// (in memory when empty), until tb's cleanup; it returns its gRPC address
// once it answers, and its process id.
func startHotlimitd(tb testing.TB, bin, redisAddr string) (string, int) {
	args := []string{"-config", "testdata/bench"}
	if redisAddr != "" {
		args = append(args, "-redis", redisAddr, "-redis-timeout", "1s")
	}
	p := startHotlimitdProc(tb, bin, false, args...)
	awaitBenchConfig(tb, p.grpc, "hotlimitd "+bin, p.log)
	return p.grpc, p.pid
}

// awaitBenchConfig waits up to 20 s for the server what, started at addr,
// to answer a request of the bench domain with a limit, and fails b with
// the server's log if it does not.
func awaitBenchConfig(b testing.TB, addr, what string, log fmt.Stringer) {
	stub := dial(b, addr)
	req := &pb.RateLimitRequest{Domain: "bench", Descriptors: benchDescriptors("ready", 0, 0, 1)}
	ok := assert.Eventually(b, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		resp, err := stub.ShouldRateLimit(ctx, req)
		return err == nil && len(resp.Statuses) == 1 && resp.Statuses[0].CurrentLimit != nil
	}, 20*time.Second, 50*time.Millisecond)
	require.True(b, ok, "%s did not answer with the bench config:\n%s", what, log.String())
}

// benchRedis starts a redis-server for a benchmark.
func benchRedis(b *testing.B) (string, int) {
	addr, proc, err := redisproc.Start(b, redisproc.Config{Args: func(port int) []string {
		return []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}
	}})
	require.NoError(b, err)
	return addr, proc.Pid
}

// BenchmarkHandler measures the handlers themselves, without gRPC: what
// deciding adds to a ShouldRateLimit call (impl=memory, impl=redis when
// redis-server is installed) over answering OK (impl=ok), in CPU time and
// allocations, which a loaded machine distorts far less than a round trip.
func BenchmarkHandler(b *testing.B) {
	cfg, err := LoadDir("testdata/bench")
	require.NoError(b, err)
	quiet := WithLogger(slog.New(slog.DiscardHandler))
	mem, err := New(cfg, quiet)
	require.NoError(b, err)
	impls := []struct {
		name string
		srv  pb.RateLimitServiceServer
	}{{"ok", okServer{}}, {"memory", mem}}
	if _, err := exec.LookPath("redis-server"); err == nil {
		addr, _ := benchRedis(b)
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64})
		b.Cleanup(func() { _ = client.Close() })
		rs, err := New(cfg, quiet, WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithTimeout(time.Second)))))
		require.NoError(b, err)
		impls = append(impls, struct {
			name string
			srv  pb.RateLimitServiceServer
		}{"redis", rs})
	}
	for _, descriptors := range []int{1, 3} {
		reqs := make([]*pb.RateLimitRequest, 1024)
		for k := range reqs {
			reqs[k] = &pb.RateLimitRequest{Domain: "bench", Descriptors: benchDescriptors("c", 0, k, descriptors)}
		}
		for _, impl := range impls {
			b.Run(fmt.Sprintf("impl=%s/descriptors=%d", impl.name, descriptors), func(b *testing.B) {
				resp, err := impl.srv.ShouldRateLimit(context.Background(), reqs[0])
				require.NoError(b, err)
				require.Len(b, resp.Statuses, descriptors)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for i := 0; pb.Next(); i++ {
						_, _ = impl.srv.ShouldRateLimit(context.Background(), reqs[i%1024])
					}
				})
			})
		}
	}
}
