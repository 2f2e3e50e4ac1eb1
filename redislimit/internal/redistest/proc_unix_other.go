//go:build unix && !linux

package redistest

import (
	"os"
	"syscall"
	"time"
)

// SysProcAttr is the attributes of every redis-server a test starts: the
// server leads its own process group. (Only Linux kills it when the test
// binary dies.)
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped gives the kernel a moment to deliver SIGSTOP.
func waitStopped(*os.Process) {
	time.Sleep(20 * time.Millisecond)
}
