package main

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// settled requires the number of goroutines to come back to at most
// baseline within 10 s: what run started has ended. It polls, with a
// deadline, for goroutines end a little after what they close.
func settled(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before run:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond) // polling, with a deadline
	}
}

// TestRunLeavesNothingBehind: whichever way run returns (a bad directory, an
// address in use for either server, a Redis that refuses connections, a
// stop before it serves, a stop once serving), every goroutine it started
// has ended and both addresses are free again.
func TestRunLeavesNothingBehind(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		args []string
		err  string
	}{
		{"no directory", context.Background(), []string{"-config", dir + "/none"}, "no such file"},
		{"gRPC address in use", context.Background(), []string{"-config", dir, "-grpc", busy.Addr().String()}, "-grpc: listen"},
		{"HTTP address in use", context.Background(), []string{"-config", dir, "-http", busy.Addr().String()}, "-http: listen"},
		{"Redis refuses", context.Background(), []string{"-config", dir, "-redis", "127.0.0.1:1"}, "-redis 127.0.0.1:1"},
		{"stopped before serving", stopped, []string{"-config", dir}, ""},
		{"stopped on Redis", stopped, []string{"-config", dir, "-redis", "127.0.0.1:1"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			baseline := runtime.NumGoroutine()
			args := append([]string{"-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reload-interval", "10ms"}, tc.args...)
			err := run(tc.ctx, args, &redisproc.SyncBuffer{}, nil)
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
			}
			settled(t, baseline)
		})
	}
	t.Run("stopped once serving", func(t *testing.T) {
		baseline := runtime.NumGoroutine()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var addrs []string
		err := run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reload-interval", "10ms"}, &redisproc.SyncBuffer{}, func(g, h string) {
			addrs = []string{g, h}
			cancel()
		})
		require.NoError(t, err)
		require.Len(t, addrs, 2)
		for _, a := range addrs {
			if c, err := net.Dial("tcp", a); err == nil {
				_ = c.Close()
				t.Errorf("%s still listens", a)
			}
		}
		settled(t, baseline)
	})
}

// failingListener is a listener whose Accept fails for good once fail is
// closed, as one whose socket the system took away.
type failingListener struct {
	net.Listener
	fail   chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (l *failingListener) Accept() (net.Conn, error) {
	select {
	case <-l.fail:
		return nil, errors.New("accept: the socket is gone")
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *failingListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// closingListener records that it was closed.
type closingListener struct {
	net.Listener
	closed atomic.Bool
}

func (l *closingListener) Close() error {
	l.closed.Store(true)
	return l.Listener.Close()
}

// TestGRPCFailureStopsHTTP: when the gRPC server fails, run returns its
// error having closed the HTTP server too, its address freed and its
// goroutines ended, not left serving in a process that is about to exit
// (or, in process, forever).
func TestGRPCFailureStopsHTTP(t *testing.T) {
	saved := listen
	t.Cleanup(func() { listen = saved })
	fail := make(chan struct{})
	var httpLis *closingListener
	listen = func(network, addr string) (net.Listener, error) {
		l, err := saved(network, addr)
		if err != nil {
			return l, err
		}
		if strings.HasSuffix(addr, ":0") && fail != nil { // the first: gRPC's
			f := &failingListener{Listener: l, fail: fail, closed: make(chan struct{})}
			fail = nil
			return f, nil
		}
		httpLis = &closingListener{Listener: l}
		return httpLis, nil
	}
	failNow := fail
	dir := t.TempDir()
	writeRule(t, dir, "2")
	baseline := runtime.NumGoroutine()
	done := make(chan error, 1)
	httpAddr := make(chan string, 1)
	go func() {
		done <- run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, &redisproc.SyncBuffer{}, func(_, h string) { httpAddr <- h })
	}()
	h := <-httpAddr
	close(failNow)
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "grpc server: accept: the socket is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return on the gRPC server's failure")
	}
	// Closed by the time run returns, whether or not the HTTP server had
	// begun to serve it. (Dialling h would not tell: once freed, the port
	// may be another process's.)
	assert.True(t, httpLis.closed.Load(), "the HTTP server still listens on %s", h)
	settled(t, baseline)
}

// TestHTTPFailureStopsGRPC: when the HTTP server fails, run returns its
// error having stopped the gRPC server too, its address freed and its
// goroutines ended, rather than serve gRPC with no /healthcheck or
// /metrics to watch it by.
func TestHTTPFailureStopsGRPC(t *testing.T) {
	saved := listen
	t.Cleanup(func() { listen = saved })
	fail := make(chan struct{})
	calls := 0
	var grpcLis *closingListener
	listen = func(network, addr string) (net.Listener, error) {
		l, err := saved(network, addr)
		if err != nil {
			return l, err
		}
		if calls++; calls == 2 { // the second: HTTP's
			return &failingListener{Listener: l, fail: fail, closed: make(chan struct{})}, nil
		}
		grpcLis = &closingListener{Listener: l}
		return grpcLis, nil
	}
	dir := t.TempDir()
	writeRule(t, dir, "2")
	baseline := runtime.NumGoroutine()
	done := make(chan error, 1)
	grpcAddr := make(chan string, 1)
	go func() {
		done <- run(context.Background(), []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0"}, &redisproc.SyncBuffer{}, func(g, _ string) { grpcAddr <- g })
	}()
	g := <-grpcAddr
	close(fail)
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "http server: accept: the socket is gone")
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return on the HTTP server's failure")
	}
	assert.True(t, grpcLis.closed.Load(), "the gRPC server still listens on %s", g) // as above
	settled(t, baseline)
}
