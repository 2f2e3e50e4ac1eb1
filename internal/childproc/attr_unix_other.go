//go:build unix && !linux && !freebsd

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: it leads its own
// process group, so a signal to the group reaches anything it forks. (Only
// Linux and FreeBSD kill it when the test binary dies.)
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
