//go:build unix && !linux

package redistest

import (
	"os"
	"syscall"
	"time"
)

// sysProcAttr puts the server in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped gives the kernel a moment to deliver SIGSTOP.
func waitStopped(*os.Process) {
	time.Sleep(20 * time.Millisecond)
}
