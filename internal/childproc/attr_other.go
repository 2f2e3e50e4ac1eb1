//go:build !unix

package childproc

import "syscall"

// Attr returns the attributes of a process a test starts: none on this
// system.
func Attr() *syscall.SysProcAttr { return nil }
