//go:build linux || freebsd

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: it leads its own
// process group (so a signal to the group reaches anything it forks), and
// the kernel kills it when the test binary dies (on Linux, when the thread
// that started it does, which it does at the latest with the binary; on
// FreeBSD, when the binary does).
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
