//go:build unix

package redistest

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the process group led by p. Every server is started
// as the leader of its own group, so this also reaches any child it forked
// (for example an RDB child feeding a replica).
func signalGroup(p *os.Process, sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}

// killProcess kills p and its children. SIGKILL also ends a stopped process;
// the SIGCONT that follows is only belt and braces.
func killProcess(p *os.Process) error {
	if err := signalGroup(p, syscall.SIGKILL); err != nil {
		return err
	}
	_ = signalGroup(p, syscall.SIGCONT)
	return nil
}

// stopProcess freezes p and its children with SIGSTOP and waits until the
// kernel reports the process as stopped.
func stopProcess(p *os.Process) error {
	if err := signalGroup(p, syscall.SIGSTOP); err != nil {
		return err
	}
	waitStopped(p)
	return nil
}

// continueProcess resumes a process frozen by stopProcess.
func continueProcess(p *os.Process) error {
	return signalGroup(p, syscall.SIGCONT)
}
