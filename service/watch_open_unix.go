//go:build unix

package service

import (
	"os"
	"syscall"
)

// openFlags opens a rules file without waiting: a named pipe put at the
// path after the watcher found a regular file there opens at once, and is
// then refused by readBounded, where opening it for reading alone would
// wait for a writer. A regular file reads the same with it.
const openFlags = os.O_RDONLY | syscall.O_NONBLOCK
