package redisbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/redis/go-redis/v9"
)

// install is the command that provides redis-server, redis-cli and
// redis-benchmark on Debian and Ubuntu.
const install = "apt-get install -y redis-server redis-tools"

// server is the redis-server of this test binary, with a client of it.
type server struct {
	addr   string
	port   int
	client *redis.Client
	cmd    *exec.Cmd
	dir    string
	exited chan struct{} // closed once the process has exited
}

var (
	once   sync.Once
	shared *server
	err0   error
)

// TestMain stops the server, if a test or benchmark started one.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	os.Exit(code)
}

// need returns the binary's redis-server, starting it on the first call.
// Without redis-server on PATH it skips tb under -short and fails it
// otherwise.
func need(tb testing.TB) *server {
	tb.Helper()
	binary(tb, "redis-server")
	once.Do(func() { shared, err0 = start() })
	if err0 != nil {
		tb.Fatal(err0)
	}
	return shared
}

// binary returns the path of name, with need's policy when it is missing.
func binary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	if testing.Short() {
		tb.Skipf("%s not found on PATH: skipping (-short)", name)
	}
	tb.Fatalf("%s not found on PATH: install it with `%s` (Debian/Ubuntu), or run with -short to skip", name, install)
	return ""
}

// start runs redis-server on a free port of 127.0.0.1, persistence off, in a
// temporary directory, and waits until it answers PING as the process it
// started. A port taken between choosing and binding it is retried, whether
// our server exits or another process's server answers there first.
func start() (*server, error) {
	var err error
	for range 5 {
		var s *server
		if s, err = launch(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// pickPort returns a loopback port free at the time of the call. Tests
// replace it to hand out a port another server holds.
var pickPort = func() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port, nil
}

// errForeign marks a port on which another process's server answered.
var errForeign = errors.New("answered by another process")

func launch() (*server, error) {
	port, err := pickPort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redisbench-")
	if err != nil {
		return nil, err
	}
	s := &server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), port: port, dir: dir, exited: make(chan struct{})}
	s.cmd = exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "")
	s.cmd.Dir = dir
	log, err := os.Create(dir + "/redis.log")
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	s.cmd.SysProcAttr = childproc.Attr() // it dies with the test binary
	err = s.cmd.Start()
	_ = log.Close()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	// PoolSize ≥ 64: every goroutine of the largest benchmark can hold a
	// connection of its own.
	s.client = redis.NewClient(&redis.Options{Addr: s.addr, PoolSize: 128})
	for deadline := time.Now().Add(10 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		err = s.client.Ping(ctx).Err()
		cancel()
		if err == nil {
			err = s.own()
			if err == nil {
				return s, nil
			}
			if errors.Is(err, errForeign) {
				s.stop()
				return nil, fmt.Errorf("redis-server on port %d: %w", port, err)
			}
		}
		select {
		case <-s.exited:
			b, _ := os.ReadFile(dir + "/redis.log")
			s.stop()
			return nil, fmt.Errorf("redis-server on port %d exited: %s", port, b)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("redis-server did not answer PING within 10s: " + err.Error())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// own checks that the server answering s.addr is s.cmd's process, by the
// process_id of INFO server, and returns an error wrapping errForeign when
// it is another.
func (s *server) own() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			if v != strconv.Itoa(s.cmd.Process.Pid) {
				return fmt.Errorf("%w: INFO server reports process_id %s, want %d", errForeign, v, s.cmd.Process.Pid)
			}
			return nil
		}
	}
	return errors.New("INFO server reports no process_id")
}

// stop closes the client, kills the server, reaps it and removes its
// directory.
func (s *server) stop() {
	_ = s.client.Close()
	_ = s.cmd.Process.Kill()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	_ = os.RemoveAll(s.dir)
}
