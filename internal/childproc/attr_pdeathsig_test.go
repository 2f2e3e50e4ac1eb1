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
// it starts a sleep with Attr, prints the sleep's pid and waits to be killed.
// It waits asleep rather than blocked for ever: a goroutine blocked for ever
// with no timer pending is a deadlock the runtime ends the process for, at
// once, and the child would die of that exit, not of the test's kill.
const parentEnv = "CHILDPROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(parentEnv) != "" {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = Attr()
		if err := cmd.Start(); err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString(strconv.Itoa(cmd.Process.Pid) + "\n")
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
		t.Fatalf("reading the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("the parent said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	if pgid, err := syscall.Getpgid(pid); err != nil || pgid != pid {
		t.Errorf("the child's process group is %d (%v), want its own, %d", pgid, err, pid)
	}
	if !alive(parent.Process.Pid) {
		t.Fatalf("the parent %d ended before it was killed", parent.Process.Pid)
	}
	if !alive(pid) {
		t.Fatalf("the child %d ended before its parent was killed", pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	if ws, ok := parent.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the parent ended by %v, not by the test's SIGKILL", parent.ProcessState)
	}
	// The kernel sends the signal as the parent exits; the orphan is then
	// reaped by init. Generous: nothing here depends on the machine's load
	// but the scheduling of an already delivered SIGKILL.
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("the child %d still runs 30 s after its parent was killed", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
