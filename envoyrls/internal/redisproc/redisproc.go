// Package redisproc starts redis-server processes on the loopback interface
// for the tests of this module, and makes sure each test talks to the server
// it started.
//
// A free port is found by listening on port 0 and closing the listener, so
// another program can bind it before redis-server does. Ours then exits
// ("Address already in use") while the other server answers on the address.
// Start therefore accepts a server only once INFO server reports the pid it
// launched, and retries on another port otherwise.
package redisproc

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/internal/childproc"
)

const (
	// attempts is how many ports Start tries before it fails the test.
	attempts = 5
	// readyTimeout bounds how long one server may take to answer.
	readyTimeout = 10 * time.Second
)

// Config says how to start one server.
type Config struct {
	// Args returns redis-server's arguments for port; Start adds none of
	// its own. It is called once per attempt, so it can name a fresh
	// directory or file each time.
	Args func(port int) []string
	// Password, if not empty, is sent with AUTH before the server is
	// asked who it is.
	Password string
	// TLS, if not nil, is the client configuration to reach a server that
	// takes TLS connections only.
	TLS *tls.Config
	// Bus asks for a port whose cluster bus port, 10000 above it, is free
	// too.
	Bus bool
}

// Process is a redis-server started by Start.
type Process struct {
	// Pid is the server's process id.
	Pid int

	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
}

// Kill kills the server, if it still runs, and waits until its process has
// been reaped. It may be called more than once; the cleanup Start registers
// calls it too.
func (p *Process) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// ErrExited is returned by Start when redis-server ended on its own for a
// reason other than its port being taken, for example an option its build
// does not support. The error carries the server's output.
var ErrExited = errors.New("redis-server exited")

// errAddrInUse and errForeign mark an attempt lost to another process.
var (
	errAddrInUse = errors.New("address already in use")
	errForeign   = errors.New("answered by another process")
)

// pickPort chooses the port of each attempt; tests replace it to hand out a
// port another server holds.
var pickPort = freePort

// Require returns the path of redis-server. Without it the test is skipped,
// except in CI (CI set), where it fails.
func Require(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("redis-server is required in CI: %v", err)
		}
		tb.Skipf("redis-server not installed: %v", err)
	}
	return bin
}

// Start starts redis-server as cfg says on a free loopback port and waits
// until it answers, as the process it launched: INFO server must report its
// pid. When another process holds the port, Start kills its own and tries
// another port, failing tb after a few attempts. A cleanup registered on tb
// kills the server and reaps it. Start returns ErrExited, and no server,
// when redis-server ends on its own for another reason; it skips or fails
// tb as Require does without redis-server.
func Start(tb testing.TB, cfg Config) (string, *Process, error) {
	tb.Helper()
	bin := Require(tb)
	var lost []string
	for range attempts {
		port, err := pickPort(cfg.Bus)
		if err != nil {
			tb.Fatalf("redisproc: %v", err)
		}
		addr, proc, err := launch(tb, bin, port, cfg)
		if err == nil {
			return addr, proc, nil
		}
		if !errors.Is(err, errAddrInUse) {
			return "", nil, err
		}
		lost = append(lost, err.Error())
	}
	tb.Fatalf("redisproc: redis-server lost its port to another process %d times:\n%s", attempts, strings.Join(lost, "\n"))
	return "", nil, nil
}

// launch starts one process on port and waits until it answers as itself.
func launch(tb testing.TB, bin string, port int, cfg Config) (string, *Process, error) {
	tb.Helper()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	out := &SyncBuffer{}
	cmd := exec.Command(bin, cfg.Args(port)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childproc.Attr() // it dies with the test binary
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redisproc: starting redis-server: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	proc := &Process{Pid: cmd.Process.Pid, cmd: cmd, exited: exited}
	stop := proc.Kill
	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-exited:
			log := out.String()
			if strings.Contains(strings.ToLower(log), "already in use") {
				return "", nil, fmt.Errorf("%s: %w", addr, errAddrInUse)
			}
			return "", nil, fmt.Errorf("%w on %s:\n%s", ErrExited, addr, log)
		default:
		}
		err := identify(addr, cmd.Process.Pid, cfg, 250*time.Millisecond)
		if err == nil {
			tb.Cleanup(stop)
			return addr, proc, nil
		}
		if errors.Is(err, errForeign) {
			stop()
			return "", nil, fmt.Errorf("%s: %w: %v", addr, errAddrInUse, err)
		}
		if time.Now().After(deadline) {
			stop()
			tb.Fatalf("redisproc: redis-server %s did not answer within %v: %v\n%s", addr, readyTimeout, err, out.String())
		}
		time.Sleep(10 * time.Millisecond) // polling for the server, with a deadline
	}
}

// identify connects to addr as cfg says, authenticates, sends PING and INFO
// server, and returns an error wrapping errForeign when the process_id INFO
// reports is not pid.
func identify(addr string, pid int, cfg Config, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if cfg.TLS != nil {
		tc := tls.Client(conn, cfg.TLS)
		if err := tc.Handshake(); err != nil {
			return err
		}
		conn = tc
	}
	var req []byte
	if cfg.Password != "" {
		req = appendCommand(req, "AUTH", cfg.Password)
	}
	req = appendCommand(req, "PING")
	req = appendCommand(req, "INFO", "server")
	if _, err := conn.Write(req); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	if cfg.Password != "" {
		if err := expectLine(r, "AUTH", "+OK"); err != nil {
			return err
		}
	}
	if err := expectLine(r, "PING", "+PONG"); err != nil {
		return err
	}
	got, err := readInfoPid(r)
	if err != nil {
		return err
	}
	if got != pid {
		return fmt.Errorf("%w: INFO server reports process_id %d, want %d", errForeign, got, pid)
	}
	return nil
}

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args ...string) []byte {
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// expectLine reads one reply line and checks it is want.
func expectLine(r *bufio.Reader, cmd, want string) error {
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(line); got != want {
		return fmt.Errorf("%s answered %q", cmd, got)
	}
	return nil
}

// readInfoPid reads the RESP bulk string answering INFO server and returns
// the process_id it reports.
func readInfoPid(r *bufio.Reader) (int, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
	if !strings.HasPrefix(line, "$") || err != nil || n < 0 || n > 1<<20 {
		return 0, fmt.Errorf("INFO server answered %q", strings.TrimSpace(line))
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				return 0, fmt.Errorf("INFO server: bad process_id %q", v)
			}
			return pid, nil
		}
	}
	return 0, errors.New("INFO server reports no process_id")
}

// freePort returns a loopback port free at the time of the call; with bus,
// one whose cluster bus port, 10000 above it, is free too.
func freePort(bus bool) (int, error) {
	for range 100 {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := lis.Addr().(*net.TCPAddr).Port
		_ = lis.Close()
		if !bus {
			return port, nil
		}
		if port+10000 > 65535 {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000))); err == nil {
			_ = l.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port with a free cluster bus port")
}

// SyncBuffer is a bytes.Buffer safe for a started process's output copier,
// or a server's goroutines, and a test that reads it at once: the log sink
// of the module's tests.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
