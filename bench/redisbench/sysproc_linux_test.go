package redisbench

import "syscall"

// sysProcAttr has the kernel kill the server if the test binary dies without
// stopping it (a -timeout panic, a SIGKILL).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
