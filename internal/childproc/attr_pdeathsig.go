//go:build linux || freebsd

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: the kernel kills
// it when the test binary dies (on Linux, when the thread that started it
// does, which it does at the latest with the binary; on FreeBSD, when the
// binary does). It stays in the test's process group, which a terminal's
// Ctrl-C reaches.
func Attr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// GroupAttr returns Attr's attributes, the process leading a process group
// of its own besides, so that a signal to the group reaches anything it
// forks (redistest pauses and kills a redis-server so). A Ctrl-C at the
// terminal no longer reaches it: it dies with the test binary instead.
func GroupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
