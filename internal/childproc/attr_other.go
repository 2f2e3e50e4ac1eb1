//go:build !unix

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: none on this
// system.
func Attr() *syscall.SysProcAttr { return nil }

// GroupAttr returns the attributes of a process a test starts to signal as
// a group: none on this system, which has no process groups.
func GroupAttr() *syscall.SysProcAttr { return nil }
