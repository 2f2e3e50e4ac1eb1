//go:build linux

package redistest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SysProcAttr is the attributes of every redis-server a test starts: the
// server leads its own process group, and the kernel kills it if the test
// binary dies without running its cleanups (a -timeout panic, a SIGKILL, a
// fuzz worker that exits or that the fuzzing coordinator stops). A server
// that outlived its binary would also hold the descriptors it inherited: a
// fuzz worker's pipes to its coordinator, which then waits for them to close
// and never reports the input that ended the worker.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitStopped polls /proc until p is in the stopped state, for at most a
// second, so that a caller of Pause can rely on the server no longer
// answering.
func waitStopped(p *os.Process) {
	path := "/proc/" + strconv.Itoa(p.Pid) + "/stat"
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(path)
		if err != nil {
			return
		}
		// The state follows the parenthesised command name.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
			switch s[i+2] {
			case 'T', 't', 'Z', 'X':
				return
			}
		}
		time.Sleep(time.Millisecond)
	}
}
