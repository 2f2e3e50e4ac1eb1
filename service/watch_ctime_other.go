//go:build !linux && !darwin

package service

import (
	"os"
	"time"
)

// changeTime returns fi's modification time: on this platform the watcher
// reads no status change time (see the Linux and Darwin versions).
func changeTime(fi os.FileInfo) time.Time {
	return fi.ModTime()
}
