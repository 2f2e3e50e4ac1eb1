//go:build linux || freebsd

package childproc

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// parentEnv, when set, makes the test binary the parent of TestChildDiesWithItsParent:
// it starts two sleeps, one with Attr and one with GroupAttr, prints their
// pids on a line and waits to be killed. It waits asleep rather than
// blocked for ever: a goroutine blocked for ever with no timer pending is a
// deadlock the runtime ends the process for, at once, and the children
// would die of that exit, not of the test's kill.
const parentEnv = "CHILDPROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) != "" {
		var pids []string
		for _, attr := range []*syscall.SysProcAttr{Attr(), GroupAttr()} {
			cmd := exec.Command("sleep", "60")
			cmd.SysProcAttr = attr
			if err := cmd.Start(); err != nil {
				os.Stdout.WriteString("error " + err.Error() + "\n")
				os.Exit(1)
			}
			pids = append(pids, strconv.Itoa(cmd.Process.Pid))
		}
		os.Stdout.WriteString(strings.Join(pids, " ") + "\n")
		for {
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// alive reports whether pid names a process that has not ended (a zombie
// has ended: it waits only to be reaped). Without /proc (FreeBSD mounts none
// by default) a zombie counts as alive: the orphans here are reaped by init.
func alive(pid int) bool {
	if runtime.GOOS != "linux" {
		return syscall.Kill(pid, 0) == nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// TestChildDiesWithItsParent: a process started with Attr stays in its
// parent's process group, which a terminal's Ctrl-C reaches, and one
// started with GroupAttr leads a group of its own; both die when their
// parent is killed.
func TestChildDiesWithItsParent(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skipf("no sleep command: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self, "-test.run", "^$")
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the children's pids: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("the parent said %q", line)
		}
		pids = append(pids, pid)
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	}
	if len(pids) != 2 {
		t.Fatalf("the parent said %q", line)
	}
	plain, leader := pids[0], pids[1]

	// The parent was started in this process's group.
	if pgid, err := syscall.Getpgid(plain); err != nil || pgid != syscall.Getpgrp() {
		t.Errorf("Attr's child's process group is %d (%v), want its parent's, %d", pgid, err, syscall.Getpgrp())
	}
	if pgid, err := syscall.Getpgid(leader); err != nil || pgid != leader {
		t.Errorf("GroupAttr's child's process group is %d (%v), want its own, %d", pgid, err, leader)
	}
	if !alive(parent.Process.Pid) {
		t.Fatalf("the parent %d ended before it was killed", parent.Process.Pid)
	}
	for _, pid := range pids {
		if !alive(pid) {
			t.Fatalf("the child %d ended before its parent was killed", pid)
		}
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if ws, ok := parent.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the parent ended by %v, not by the test's SIGKILL", parent.ProcessState)
	}
	// The kernel sends the signal as the parent exits; the orphans are then
	// reaped by init. Generous: nothing here depends on the machine's load
	// but the scheduling of an already delivered SIGKILL.
	deadline := time.Now().Add(30 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("the child %d still runs 30 s after its parent was killed", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}
