//go:build unix && !linux && !freebsd

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: none, so that it
// stays in the test's process group, which a terminal's Ctrl-C reaches.
// (Only Linux and FreeBSD kill it when the test binary dies.)
func Attr() *syscall.SysProcAttr { return nil }

// GroupAttr returns the attributes of a process a test starts to signal as
// a group: it leads a process group of its own, so that a signal to the
// group reaches anything it forks (redistest pauses and kills a
// redis-server so). A Ctrl-C at the terminal no longer reaches it, nor does
// the test binary's death end it.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
