package service

import (
	"os"
	"syscall"
	"time"
)

// changeTime returns when fi's file last changed, content or metadata: its
// status change time (ctime), which a write, a rename or a new file sets to
// the time of the change and which no tool can set back, unlike the
// modification time. It returns the modification time when fi holds no
// ctime.
func changeTime(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Ctim.Unix())
	}
	return fi.ModTime()
}
