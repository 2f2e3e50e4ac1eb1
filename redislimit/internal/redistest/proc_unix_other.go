//go:build unix && !linux

package redistest

import (
	"os"
	"time"
)

// waitStopped gives the kernel a moment to deliver SIGSTOP.
func waitStopped(*os.Process) {
	time.Sleep(20 * time.Millisecond)
}
