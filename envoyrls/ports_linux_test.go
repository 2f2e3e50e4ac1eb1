package envoyrls

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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
)

// The tests of this file make the starters of the servers that run as
// processes of their own (hotlimitd's command, the reference server) meet
// another server on the port they chose, as a test running at the same
// time can take a port found free before the server binds it. The test
// binary plays two parts in a process of its own, chosen by helperEnv:
//
//   - "reference": a stand-in for the reference server, which listens
//     where the reference's environment says, as the reference does
//     (gRPC and HTTP under SO_REUSEPORT, ending when it cannot; its
//     Prometheus endpoint ignoring that it could not), and serves the
//     rules of its configuration in memory;
//   - "hotlimitd": a wrapper of hotlimitd's binary (helperBinEnv), which it
//     runs in its place, with its arguments.
//
// Each first tells the test (over the Unix socket helperSocketEnv) the
// addresses it is about to listen on, and waits for the test's answer:
// the test puts its foreign server there first.
const (
	helperEnv       = "ENVOYRLS_TEST_HELPER"
	helperSocketEnv = "ENVOYRLS_TEST_HELPER_SOCKET"
	helperBinEnv    = "ENVOYRLS_TEST_HELPER_BIN"
)

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "reference":
		fakeReference()
	case "hotlimitd":
		wrapHotlimitd()
	}
	fmt.Fprintf(os.Stderr, "%s=%q: no such helper\n", helperEnv, os.Getenv(helperEnv))
	os.Exit(2)
}

// handshake tells the test the addresses the helper is about to listen on
// and waits for its answer.
func handshake(addrs ...string) {
	conn, err := net.Dial("unix", os.Getenv(helperSocketEnv))
	if err != nil {
		helperFatal("handshake: %v", err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintln(conn, strings.Join(addrs, " ")); err != nil {
		helperFatal("handshake: %v", err)
	}
	if _, err := bufio.NewReader(conn).ReadString('\n'); err != nil {
		helperFatal("handshake: %v", err)
	}
}

func helperFatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

// wrapHotlimitd runs hotlimitd in the wrapper's place, after the
// handshake names its -grpc and -http addresses.
func wrapHotlimitd() {
	var grpcAddr, httpAddr string
	for i, a := range os.Args[:len(os.Args)-1] {
		switch a {
		case "-grpc":
			grpcAddr = os.Args[i+1]
		case "-http":
			httpAddr = os.Args[i+1]
		}
	}
	handshake(grpcAddr, httpAddr)
	bin := os.Getenv(helperBinEnv)
	helperFatal("exec %s: %v", bin, syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ()))
}

// fakeReference serves as the reference server would with its
// environment (the settings launchReference gives), until killed.
func fakeReference() {
	addr := func(host, port string) string { return net.JoinHostPort(os.Getenv(host), os.Getenv(port)) }
	grpcAddr, httpAddr, promAddr := addr("GRPC_HOST", "GRPC_PORT"), addr("HOST", "PORT"), ""
	if os.Getenv("USE_PROMETHEUS") == "true" {
		promAddr = os.Getenv("PROMETHEUS_ADDR")
	}
	handshake(grpcAddr, httpAddr, promAddr)
	cfg, err := LoadDir(filepath.Join(os.Getenv("RUNTIME_ROOT"), os.Getenv("RUNTIME_SUBDIRECTORY"), os.Getenv("RUNTIME_APPDIRECTORY")))
	if err != nil {
		helperFatal("%v", err)
	}
	srv, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		helperFatal("%v", err)
	}
	reuse := net.ListenConfig{Control: reusePort}
	glis, err := reuse.Listen(context.Background(), "tcp", grpcAddr)
	if err != nil {
		helperFatal("Failed to listen for gRPC on '%s': %v", grpcAddr, err)
	}
	g := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(g, srv)
	go func() { _ = g.Serve(glis) }()
	if promAddr != "" {
		// As the reference's Prometheus sink: a failure to listen is
		// ignored.
		go func() {
			_ = http.ListenAndServe(promAddr, promhttp.HandlerFor(prometheus.NewRegistry(), promhttp.HandlerOpts{}))
		}()
	}
	hlis, err := reuse.Listen(context.Background(), "tcp", httpAddr)
	if err != nil {
		helperFatal("Failed to open HTTP listener: '%v'", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/json", srv.JSONHandler())
	mux.HandleFunc("/healthcheck", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "OK") })
	helperFatal("%v", http.Serve(hlis, mux))
}

// reusePort sets SO_REUSEPORT on a socket about to listen, as the
// reference's listeners do.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

// foreign is a server of another process's in the test's: a gRPC server of
// cfgDir's rules, or an HTTP server, on a port a helper is about to listen
// on, counting what it answers.
type foreign struct {
	calls atomic.Int64
}

// listen starts the foreign server on addr (reuse: under SO_REUSEPORT),
// gRPC with the rules of cfgDir unless cfgDir is empty, until t's cleanup.
// It runs on the goroutine of helperHandshakes, so it fails t with Errorf.
func (f *foreign) listen(t *testing.T, addr, cfgDir string, reuse bool) {
	var lc net.ListenConfig
	if reuse {
		lc.Control = reusePort
	}
	lis, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		t.Errorf("the foreign server: %v", err)
		return
	}
	if cfgDir == "" {
		hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			f.calls.Add(1)
			_, _ = io.WriteString(w, "foreign\n")
		})}
		go func() { _ = hs.Serve(lis) }()
		t.Cleanup(func() { _ = hs.Close() })
		return
	}
	var srv *Server
	cfg, err := LoadDir(cfgDir)
	if err == nil {
		srv, err = New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	}
	if err != nil {
		_ = lis.Close()
		t.Errorf("the foreign server: %v", err)
		return
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		f.calls.Add(1)
		return h(ctx, req)
	}))
	pb.RegisterRateLimitServiceServer(g, srv)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
}

// helperHandshakes answers the helpers' handshakes until t ends: place,
// called with the addresses each names (one per attempt of a starter),
// may put foreign servers there before the helper goes on.
func helperHandshakes(t *testing.T, place func(attempt int, addrs []string)) {
	dir, err := os.MkdirTemp("", "hs") // short: a socket's path is at most 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lis.Close() })
	t.Setenv(helperSocketEnv, sock)
	conns := make(chan net.Conn)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				close(conns)
				return
			}
			conns <- c
		}
	}()
	done := make(chan struct{})
	t.Cleanup(func() { _ = lis.Close(); <-done })
	go func() {
		defer close(done)
		attempt := 0
		for c := range conns {
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				place(attempt, strings.Fields(line))
				attempt++
				_, _ = io.WriteString(c, "go on\n")
			}
			_ = c.Close()
		}
	}()
}

// portOf returns addr's port, 0 for none or when addr has none.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	port, _ := strconv.Atoi(p)
	return port
}

// buildHotlimitd builds ./cmd/hotlimitd into a temporary directory.
func buildHotlimitd(t *testing.T) string {
	bin := filepath.Join(t.TempDir(), "hotlimitd")
	out, err := exec.Command("go", "build", "-o", bin, "./cmd/hotlimitd").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// TestHotlimitdStartersNotFooledByAForeignServer: the benchmark's and the
// differential test's starters of hotlimitd's command meet, on the
// addresses they give it, a server of the same rules in another process
// that got there first. They must return the addresses of the command they
// started, not the other's (which would answer in its place): hotlimitd
// binds ports of its own, and names them.
func TestHotlimitdStartersNotFooledByAForeignServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	hotlimitd := buildHotlimitd(t)
	self, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, dir, domain string
		start             func(t *testing.T) (grpcAddr, httpAddr string)
	}{
		{"bench", "testdata/bench", "bench", func(t *testing.T) (string, string) {
			addr, _ := startHotlimitd(t, self, "")
			return addr, ""
		}},
		{"refdiff", "testdata/refdiff", "diff", func(t *testing.T) (string, string) {
			redisAddr, _ := startRedis(t)
			return startHotlimitdOn(t, self, redisAddr, "testdata/refdiff", t.Name()+":")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var grpcForeign, httpForeign foreign
			helperHandshakes(t, func(_ int, addrs []string) {
				if len(addrs) > 0 && portOf(addrs[0]) != 0 {
					grpcForeign.listen(t, addrs[0], tc.dir, false)
				}
				if len(addrs) > 1 && portOf(addrs[1]) != 0 {
					httpForeign.listen(t, addrs[1], "", false)
				}
			})
			t.Setenv(helperEnv, "hotlimitd")
			t.Setenv(helperBinEnv, hotlimitd)
			grpcAddr, httpAddr := tc.start(t)
			if httpAddr != "" {
				res, err := http.Get("http://" + httpAddr + "/healthcheck")
				require.NoError(t, err)
				_ = res.Body.Close()
				assert.Equal(t, http.StatusOK, res.StatusCode)
			}
			_, err := dial(t, grpcAddr).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: tc.domain, Descriptors: benchDescriptors("x", 0, 0, 1)})
			require.NoError(t, err)
			assert.Zero(t, grpcForeign.calls.Load(), "gRPC calls answered by the foreign server at %s", grpcAddr)
			assert.Zero(t, httpForeign.calls.Load(), "HTTP requests answered by the foreign server at %s", httpAddr)
		})
	}
}

// TestReferenceStarterNotFooledByAForeignServer: the reference server's
// starter meets, on a port it gives it, another process's server that got
// there first: a gRPC server of the same rules (the reference, which
// cannot bind it, ends), one that shares the port under SO_REUSEPORT (as
// another reference server would: the kernel spreads the connections
// between both), or an HTTP server on its Prometheus port (which the
// reference, ignoring that it could not listen, leaves to it). The starter
// must notice and start it again on other ports, and return addresses
// where the reference alone answers.
func TestReferenceStarterNotFooledByAForeignServer(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip(errNoProcNet)
	}
	self, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		which int // the address taken: 0 gRPC, 2 Prometheus
		reuse bool
	}{
		{"gRPC port taken", 0, false},
		{"gRPC port shared", 0, true},
		{"Prometheus port taken", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f foreign
			helperHandshakes(t, func(attempt int, addrs []string) {
				if attempt > 0 {
					return
				}
				if len(addrs) != 3 {
					t.Errorf("handshake: %q, want the gRPC, HTTP and Prometheus addresses", addrs)
					return
				}
				dir := ""
				if tc.which == 0 {
					dir = "testdata/refdiff"
				}
				f.listen(t, addrs[tc.which], dir, tc.reuse)
			})
			t.Setenv(helperEnv, "reference")
			grpcAddr, promAddr := startReferenceOn(t, self, "127.0.0.1:1", "testdata/refdiff", "p_")
			// Connections of their own, which the kernel spreads over
			// the listeners of a shared port.
			for range 16 {
				_, err := dial(t, grpcAddr).ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "diff", Descriptors: benchDescriptors("x", 0, 0, 1)})
				require.NoError(t, err)
			}
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
			res, err := c.Get("http://" + promAddr + "/metrics")
			require.NoError(t, err)
			_ = res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Zero(t, f.calls.Load(), "calls answered by the foreign server")
		})
	}
}
