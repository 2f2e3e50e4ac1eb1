package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

func ctxTimeout(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestStartSetGet(t *testing.T) {
	t.Parallel()
	s := Start(t)
	if !s.Running() {
		t.Fatal("Running() = false after Start")
	}
	c := s.Client()
	ctx := ctxTimeout(t, 5*time.Second)
	if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("GET = %q, %v; want v", got, err)
	}
	// Persistence is off.
	if got, err := c.ConfigGet(ctx, "save").Result(); err != nil || got["save"] != "" {
		t.Fatalf("CONFIG GET save = %v, %v; want empty", got, err)
	}
}

func TestStartExtraArgs(t *testing.T) {
	t.Parallel()
	s := Start(t, "--maxmemory", "10mb")
	ctx := ctxTimeout(t, 5*time.Second)
	got, err := s.Client().ConfigGet(ctx, "maxmemory").Result()
	if err != nil || got["maxmemory"] != "10485760" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 10485760", got, err)
	}
}

func TestKillRestart(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client()
	ctx := ctxTimeout(t, 10*time.Second)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	s.Kill()
	if s.Running() {
		t.Fatal("Running() = true after Kill")
	}
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING succeeded against a killed server")
	}
	s.Kill() // no-op

	s.Restart()
	if !s.Running() {
		t.Fatal("Running() = false after Restart")
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	// Persistence is off, so the restarted server is empty.
	if n, err := c.Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k after Restart = %d, %v; want 0", n, err)
	}

	// Restart of a running server replaces the process.
	s.Restart()
	if err := c.Set(ctx, "k2", "v", 0).Err(); err != nil {
		t.Fatalf("SET after second Restart: %v", err)
	}
}

func TestPauseResume(t *testing.T) {
	t.Parallel()
	s := Start(t)
	c := s.Client()
	if err := c.Ping(ctxTimeout(t, 5*time.Second)).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	s.Pause()
	if !s.Running() {
		t.Fatal("Running() = false for a paused server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	err := c.Ping(ctx).Err()
	cancel()
	if !isTimeout(err) {
		t.Fatalf("PING against a paused server: err = %v; want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("PING against a paused server took %v; want about 200ms", d)
	}

	s.Resume()
	if err := c.Ping(ctxTimeout(t, 5*time.Second)).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestKillWhilePaused(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Pause()
	s.Kill()
	if s.Running() {
		t.Fatal("Running() = true after Kill of a paused server")
	}
	s.Restart()
	if err := s.Client().Ping(ctxTimeout(t, 5*time.Second)).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	// Left paused on purpose: the cleanup must still kill and reap it.
	s.Pause()
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := make(map[int]bool)
	for range 20 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p <= 0 || p > 65535 || seen[p] {
			t.Fatalf("FreePort() = %d (seen before: %v)", p, seen[p])
		}
		seen[p] = true
	}
}

func TestClusterSetGet(t *testing.T) {
	t.Parallel()
	c := StartCluster(t, 3, 0)
	if len(c.Nodes) != 3 || len(c.Addrs()) != 3 {
		t.Fatalf("got %d nodes, %d addrs; want 3", len(c.Nodes), len(c.Addrs()))
	}
	if m := c.Masters(); len(m) != 3 {
		t.Fatalf("Masters() returned %d nodes; want 3", len(m))
	}

	client := c.Client()
	ctx := ctxTimeout(t, 10*time.Second)
	perMaster := make(map[*Server]int)
	for i := range 100 {
		key := fmt.Sprintf("key:%d", i)
		if err := client.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		got, err := client.Get(ctx, key).Int()
		if err != nil || got != i {
			t.Fatalf("GET %s = %d, %v; want %d", key, got, err, i)
		}
		m := c.MasterOf(key)
		if m == nil {
			t.Fatalf("MasterOf(%q) = nil", key)
		}
		perMaster[m]++
	}
	if len(perMaster) != 3 {
		t.Fatalf("100 keys landed on %d masters; want 3", len(perMaster))
	}
	// Each master holds exactly the keys MasterOf attributes to it.
	for m, want := range perMaster {
		n, err := m.Client().DBSize(ctx).Result()
		if err != nil || n != int64(want) {
			t.Fatalf("DBSIZE on %s = %d, %v; want %d", m.Addr, n, err, want)
		}
	}
	if err := c.WaitOK(time.Second); err != nil {
		t.Fatalf("WaitOK: %v", err)
	}
}

func TestClusterFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t, 3, 1)
	t.Logf("StartCluster took %v", time.Since(start))
	if len(c.Nodes) != 6 {
		t.Fatalf("got %d nodes; want 6", len(c.Nodes))
	}
	if m := c.Masters(); len(m) != 3 {
		t.Fatalf("Masters() returned %d nodes; want 3", len(m))
	}

	const key = "failover-key"
	client := c.Client()
	ctx := ctxTimeout(t, 15*time.Second)
	if err := client.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	old := c.MasterOf(key)
	if old == nil {
		t.Fatal("MasterOf = nil")
	}
	// Make sure the replica has the key before the master goes away.
	if n, err := old.Client().Do(ctx, "WAIT", 1, 2000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}

	old.Kill()
	start = time.Now()
	if err := c.WaitFailover(old, 10*time.Second); err != nil {
		t.Fatalf("WaitFailover: %v", err)
	}
	t.Logf("failover took %v", time.Since(start))
	now := c.MasterOf(key)
	if now == nil || now == old {
		t.Fatalf("MasterOf after failover = %s; want a node other than %s", addrOf(now), old.Addr)
	}
	masters := c.Masters()
	if len(masters) != 3 {
		t.Fatalf("Masters() after failover returned %d nodes; want 3", len(masters))
	}
	for _, m := range masters {
		if m == old {
			t.Fatal("the killed node is still listed as a master")
		}
	}
	if got, err := now.Client().Get(ctx, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET on the new master = %q, %v; want v", got, err)
	}

	// WaitFailover refreshed the cluster client's slot map.
	if err := client.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatalf("SET through the cluster client after failover: %v", err)
	}
	if got, err := client.Get(ctx, key).Result(); err != nil || got != "v2" {
		t.Fatalf("GET through the cluster client = %q, %v; want v2", got, err)
	}

	// The old master comes back as a replica of the new one.
	start = time.Now()
	old.Restart()
	if err := c.WaitOK(10 * time.Second); err != nil {
		t.Fatalf("WaitOK after restarting the old master: %v", err)
	}
	t.Logf("restart and WaitOK took %v", time.Since(start))
	role, err := old.Client().Do(ctx, "ROLE").Slice()
	if err != nil || len(role) < 3 || role[0] != "slave" || fmt.Sprint(role[2]) != fmt.Sprint(portOf(now.Addr)) {
		t.Fatalf("ROLE of the restarted old master = %v, %v; want a replica of %s", role, err, now.Addr)
	}
	for _, m := range c.Masters() {
		if m == old {
			t.Fatal("the restarted old master is listed as a master")
		}
	}
	if m := c.MasterOf(key); m != now {
		t.Fatalf("MasterOf after restarting the old master = %s; want %s", addrOf(m), now.Addr)
	}
}

func TestWaitFailoverRejectsLiveNode(t *testing.T) {
	t.Parallel()
	c := &Cluster{tb: t}
	s := Start(t)
	c.Nodes = []*Server{s}
	if err := c.WaitFailover(s, time.Second); err == nil {
		t.Fatal("WaitFailover accepted a node that is still running")
	}
}

func addrOf(s *Server) string {
	if s == nil {
		return "<nil>"
	}
	return s.Addr
}

// TestStartSkipsAPortAnotherServerTook hands Start the port of a server it
// did not start, as happens when another program binds the port between
// FreePort's probe and redis-server's bind: Start must not settle for the
// other server answering PING, but retry on another port and end on its own.
// It replaces pickPort, so it must not run in parallel.
func TestStartSkipsAPortAnotherServerTook(t *testing.T) {
	foreign := Start(t)
	taken := portOf(foreign.Addr)
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return taken, nil
		}
		return FreePort()
	}
	t.Cleanup(func() { pickPort = FreePort })

	s := Start(t)
	if s.Addr == foreign.Addr {
		t.Fatalf("Start ended on %s, the address of a server it did not start", s.Addr)
	}
	ctx := ctxTimeout(t, 5*time.Second)
	info, err := s.Client().Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	s.mu.Lock()
	pid := s.proc.Pid
	s.mu.Unlock()
	if want := fmt.Sprintf("process_id:%d\r\n", pid); !strings.Contains(info, want) {
		t.Fatalf("server at %s is not the one Start launched (pid %d):\n%s", s.Addr, pid, info)
	}
	if !foreign.Running() {
		t.Fatal("the other server was stopped")
	}
}
