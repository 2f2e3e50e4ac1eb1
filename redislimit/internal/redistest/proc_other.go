//go:build !unix

package redistest

import (
	"errors"
	"os"
	"syscall"
)

var errNoSignals = errors.New("redistest: pausing a process is not supported on this system")

// SysProcAttr is the attributes of every redis-server a test starts: none
// on this system.
func SysProcAttr() *syscall.SysProcAttr { return nil }

func killProcess(p *os.Process) error { return p.Kill() }

func stopProcess(*os.Process) error { return errNoSignals }

func continueProcess(*os.Process) error { return errNoSignals }
