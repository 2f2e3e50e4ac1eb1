//go:build linux

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: it leads its own
// process group (so a signal to the group reaches anything it forks), and
// the kernel kills it when the thread that started it, and so the test
// binary, dies.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
