//go:build !unix

package service

import "os"

// openFlags opens a rules file (see the Unix version).
const openFlags = os.O_RDONLY
