//go:build !unix

package redistest

import (
	"errors"
	"os"
)

var errNoSignals = errors.New("redistest: pausing a process is not supported on this system")

func killProcess(p *os.Process) error { return p.Kill() }

func stopProcess(*os.Process) error { return errNoSignals }

func continueProcess(*os.Process) error { return errNoSignals }
