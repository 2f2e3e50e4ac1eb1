// Package redistest starts real redis-server processes on the loopback
// interface for tests, and injects faults into them: killing, freezing
// (SIGSTOP) and restarting servers, and failing over cluster masters.
//
// Every server runs in its own temporary directory with persistence off and
// is killed, and its process reaped, by a cleanup registered on the test that
// started it. The helpers need the redis-server binary (and redis-cli for
// clusters) on PATH; see Require.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/redis/go-redis/v9"
)

const (
	// readyTimeout bounds how long a freshly started server may take to
	// answer PING.
	readyTimeout = 10 * time.Second
	// exitTimeout bounds how long a killed server may take to be reaped.
	exitTimeout = 10 * time.Second
	// logName is the file, in the server's directory, that receives the
	// server's stdout and stderr.
	logName = "redis.log"
)

// Require checks that redis-server is on PATH. If it is not, Require skips the
// test when it runs with -short and fails it otherwise, with a message that
// says how to install it. Start and StartCluster call it first.
func Require(tb testing.TB) {
	tb.Helper()
	requireBinary(tb, "redis-server", "redis-server")
}

// requireBinary checks that the named binary is on PATH, with the same
// skip-or-fail policy as Require, and returns its path.
func requireBinary(tb testing.TB, name, debPackage string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if testing.Short() {
		tb.Skipf("%s not found on PATH; skipping the Redis tests (-short)", name)
	}
	tb.Fatalf("%s not found: install it with `apt-get install -y %s` (Debian/Ubuntu) or run the tests with -short to skip the Redis tests", name, debPackage)
	return ""
}

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// FreePort returns a TCP port that is free on 127.0.0.1 at the time of the
// call. It prefers ports below the kernel's ephemeral range, so that outgoing
// connections cannot take the port while a server on it is down, and it never
// returns the same port twice within one test binary.
func FreePort() (int, error) {
	portMu.Lock()
	defer portMu.Unlock()

	lo, hi := ephemeralRange()
	for range 200 {
		p := 10000 + rand.IntN(20000)
		if (p >= lo && p <= hi) || portsUsed[p] {
			continue
		}
		if canBind(p) {
			portsUsed[p] = true
			return p, nil
		}
	}
	// Fall back to a port chosen by the kernel.
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: finding a free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !portsUsed[p] {
			portsUsed[p] = true
			return p, nil
		}
	}
	return 0, errors.New("redistest: no free port found on 127.0.0.1")
}

// ephemeralRange returns the kernel's range for outgoing ports, or the Linux
// default when it cannot be read.
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return lo, hi
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return lo, hi
	}
	return l, h
}

func canBind(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// Server is one redis-server process started by Start or StartCluster. Its
// methods may be called from any goroutine, except Restart, which must be
// called from the goroutine running the test.
type Server struct {
	// Addr is the server's address, "127.0.0.1:port". It stays the same
	// across Restart.
	Addr string

	tb      testing.TB
	bin     string
	dir     string
	cluster bool     // also needs a cluster bus port
	extra   []string // arguments given by the caller
	port    int
	busPort int
	args    []string // full argument list, reused by Restart

	mu     sync.Mutex
	proc   *os.Process
	done   chan struct{} // closed once proc has exited and been reaped
	paused bool
	client *redis.Client
	admin  *redis.Client
}

// Start starts redis-server on a free port of 127.0.0.1, in a temporary
// directory, with persistence off (--save "" --appendonly no) followed by
// args, and waits until it answers PING. A cleanup registered on tb kills the
// server and reaps its process. Start fails tb if the server does not come
// up, and skips or fails it as Require does when redis-server is missing.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	Require(tb)
	return startServer(tb, false, args)
}

func startServer(tb testing.TB, cluster bool, extra []string) *Server {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	s := &Server{
		tb:      tb,
		bin:     bin,
		dir:     tb.TempDir(),
		cluster: cluster,
		extra:   append([]string(nil), extra...),
	}
	// Registered after TempDir, so it runs before the directory is removed.
	tb.Cleanup(s.cleanup)

	s.mu.Lock()
	defer s.mu.Unlock()
	for attempt := 1; ; attempt++ {
		if err := s.pickPorts(); err != nil {
			tb.Fatal(err)
		}
		err := s.launchAndWait()
		if err == nil {
			return s
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 {
			tb.Fatalf("redistest: starting redis-server: %v", err)
		}
	}
}

// pickPorts chooses the server's ports and builds its argument list.
func (s *Server) pickPorts() error {
	var err error
	if s.port, err = pickPort(); err != nil {
		return err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	s.args = []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--daemonize", "no",
		"--save", "",
		"--appendonly", "no",
	}
	if s.cluster {
		if s.busPort, err = pickPort(); err != nil {
			return err
		}
		s.args = append(s.args, "--cluster-port", strconv.Itoa(s.busPort))
	}
	s.args = append(s.args, s.extra...)
	return nil
}

// pickPort chooses each port a server is started on. Tests replace it to
// hand out a port that another server already holds.
var pickPort = FreePort

var errAddrInUse = errors.New("address already in use")

// ErrForeign is returned by Identify when the address answers but the
// server answering is not the process that was started.
var ErrForeign = errors.New("answered by another process")

// Identify checks that the redis-server answering PING at addr is process
// pid, by its INFO server. It returns an error wrapping ErrForeign when
// another process answers, and another error when none answers within
// timeout. It is for servers started without a testing.TB; Start and
// StartCluster check their own.
func Identify(addr string, pid int, timeout time.Duration) error {
	return pingOwn(addr, pid, timeout)
}

// launchAndWait starts the process and waits until it answers PING and
// INFO server names its pid. It returns an error wrapping errAddrInUse when
// the server could not bind one of its ports, or when another process
// answers on its address: between FreePort closing its probe and
// redis-server binding, another program can take the port, and its server
// would otherwise be mistaken for ours until ours exits. s.mu must be held.
func (s *Server) launchAndWait() error {
	logPath := filepath.Join(s.dir, logName)
	var logStart int64
	if fi, err := os.Stat(logPath); err == nil {
		logStart = fi.Size()
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = childproc.GroupAttr() // its own group, for signalGroup; it dies with the test binary
	err = cmd.Start()
	_ = logFile.Close()
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.proc, s.done, s.paused = cmd.Process, done, false

	deadline := time.Now().Add(readyTimeout)
	for {
		select {
		case <-done:
			s.proc = nil
			out := readLog(logPath, logStart)
			if strings.Contains(strings.ToLower(out), "already in use") {
				return fmt.Errorf("%s: %w:\n%s", s.Addr, errAddrInUse, out)
			}
			return fmt.Errorf("redis-server %s exited early:\n%s", s.Addr, out)
		default:
		}
		err := pingOwn(s.Addr, cmd.Process.Pid, 250*time.Millisecond)
		if err == nil {
			return nil
		}
		if errors.Is(err, ErrForeign) {
			if kerr := s.killLocked(); kerr != nil {
				return kerr
			}
			return fmt.Errorf("%s: %w: %v", s.Addr, errAddrInUse, err)
		}
		if time.Now().After(deadline) {
			_ = s.killLocked()
			return fmt.Errorf("redis-server %s did not answer PING within %v: %v\n%s",
				s.Addr, readyTimeout, err, readLog(logPath, logStart))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readLog returns the server log written from offset on, shortened to its
// last few kilobytes.
func readLog(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	b = b[offset:]
	const max = 4 << 10
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// pingOwn sends a raw RESP PING and INFO server to addr, expects PONG, and
// returns an error wrapping ErrForeign when the process_id INFO reports is
// not pid.
func pingOwn(addr string, pid int, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	got, err := readInfoPid(r)
	if err != nil {
		return err
	}
	if got != pid {
		return fmt.Errorf("%w: INFO server reports process_id %d, want %d", ErrForeign, got, pid)
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
	if !strings.HasPrefix(line, "$") {
		return 0, fmt.Errorf("INFO server answered %q", strings.TrimSpace(line))
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 || n > 1<<20 {
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

// killLocked kills the process, if it is still running, and waits until it
// has been reaped. s.mu must be held.
func (s *Server) killLocked() error {
	if s.proc == nil {
		return nil
	}
	proc, done := s.proc, s.done
	s.proc, s.paused = nil, false
	select {
	case <-done:
		return nil
	default:
	}
	if err := killProcess(proc); err != nil {
		return fmt.Errorf("redistest: killing redis-server %s: %w", s.Addr, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(exitTimeout):
		return fmt.Errorf("redistest: redis-server %s (pid %d) did not exit within %v of SIGKILL", s.Addr, proc.Pid, exitTimeout)
	}
}

func (s *Server) cleanup() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.killLocked(); err != nil {
		s.tb.Error(err)
	}
	if s.client != nil {
		_ = s.client.Close()
		s.client = nil
	}
	if s.admin != nil {
		_ = s.admin.Close()
		s.admin = nil
	}
}

// Kill kills the server with SIGKILL, even if it is paused, and waits until
// its process has exited. It does nothing if the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.killLocked(); err != nil {
		s.tb.Error(err)
	}
}

// Pause freezes the server with SIGSTOP: it keeps its port and accepts TCP
// connections, but answers nothing until Resume. It does nothing if the
// server is not running.
func (s *Server) Pause() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() || s.paused {
		return
	}
	if err := stopProcess(s.proc); err != nil {
		s.tb.Errorf("redistest: pausing redis-server %s: %v", s.Addr, err)
		return
	}
	s.paused = true
}

// Resume lets a server frozen by Pause run again (SIGCONT).
func (s *Server) Resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() || !s.paused {
		return
	}
	if err := continueProcess(s.proc); err != nil {
		s.tb.Errorf("redistest: resuming redis-server %s: %v", s.Addr, err)
		return
	}
	s.paused = false
}

// Restart kills the server if it is running and starts a fresh process on
// the same address, in the same directory and with the same arguments, then
// waits until it answers PING. A standalone server comes back empty, since
// persistence is off; a cluster node keeps its identity, which it reads back
// from nodes.conf. If the port is briefly taken, Restart retries for a few
// seconds. It fails the test if the server does not come back, so it must be
// called from the goroutine running the test.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.killLocked(); err != nil {
		s.tb.Fatal(err)
	}
	const attempts = 10
	for attempt := 1; ; attempt++ {
		err := s.launchAndWait()
		if err == nil {
			return
		}
		if !errors.Is(err, errAddrInUse) || attempt == attempts {
			s.tb.Fatalf("redistest: restarting redis-server: %v", err)
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
}

// Running reports whether the server process is alive, paused or not.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked()
}

func (s *Server) runningLocked() bool {
	if s.proc == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// reachable reports whether the server is running and not paused, that is
// whether it can be expected to answer.
func (s *Server) reachable() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked() && !s.paused
}

func (s *Server) isPaused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runningLocked() && s.paused
}

// Client returns a go-redis client for Addr, created on the first call and
// closed by the test's cleanup. Context deadlines bound each command
// (ContextTimeoutEnabled), so a command against a paused server fails when
// its context expires, and each connection attempt dials once
// (DialerRetries 1), so commands against a killed server fail quickly. The
// client survives Kill and Restart: it reconnects once the server is back.
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(&redis.Options{
			Addr:                  s.Addr,
			DialerRetries:         1,
			ContextTimeoutEnabled: true,
		})
	}
	return s.client
}

// adminClient returns an internal client with short timeouts and no retries,
// used to inspect the server.
func (s *Server) adminClient() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admin == nil {
		s.admin = redis.NewClient(&redis.Options{
			Addr:                  s.Addr,
			Protocol:              2,
			DialTimeout:           time.Second,
			ReadTimeout:           time.Second,
			WriteTimeout:          time.Second,
			MaxRetries:            -1,
			PoolSize:              2,
			ContextTimeoutEnabled: true,
			DisableIdentity:       true,
		})
	}
	return s.admin
}

// port number of addr, or -1.
func portOf(addr string) int {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return -1
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		return -1
	}
	return n
}

// adminCtx returns a context for one inspection command.
func adminCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Second)
}
