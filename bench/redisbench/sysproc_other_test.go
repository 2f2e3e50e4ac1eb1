//go:build !linux

package redisbench

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
