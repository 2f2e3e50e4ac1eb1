package redisbench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartSkipsAPortAnotherServerTook hands start the port of a
// redis-server it did not start, as when another program binds the port
// between the probe and redis-server's bind: start must not take that
// server for its own (the benchmarks would measure and empty it), but end
// on one of its own, on another port. It replaces pickPort, so it must not
// run in parallel.
func TestStartSkipsAPortAnotherServerTook(t *testing.T) {
	binary(t, "redis-server")
	foreign, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer foreign.stop()
	free := pickPort
	picks := 0
	pickPort = func() (int, error) {
		picks++
		if picks == 1 {
			return foreign.port, nil
		}
		return free()
	}
	defer func() { pickPort = free }()

	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	if s.addr == foreign.addr {
		t.Fatalf("start ended on %s, the address of a server it did not start", s.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := s.client.Info(ctx, "server").Result()
	if err != nil {
		t.Fatalf("INFO server: %v", err)
	}
	if want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid) + "\r\n"; !strings.Contains(info, want) {
		t.Fatalf("the server at %s is not the one start launched (pid %d):\n%s", s.addr, s.cmd.Process.Pid, info)
	}
}
