//go:build linux || darwin

package service

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchFileRewrittenInPlaceWithItsTimeSetBackIsLoaded: the file is
// rewritten in place (the same inode, as cp -p over it, or an inode number
// reused by an archive unpacked over it) with rules of the same size, and
// its modification time set back to what it was, as tools that pin file
// times do. Size, time and inode all look unchanged, long after the last
// read: only the status change time, which no tool sets back, says the
// file changed. The new rules are loaded.
func TestWatchFileRewrittenInPlaceWithItsTimeSetBackIsLoaded(t *testing.T) {
	require.Len(t, watchedB, len(watchedA))
	s, p, path := watchedService(t)
	pinned := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC) // as SOURCE_DATE_EPOCH pins it
	require.NoError(t, os.Chtimes(path, pinned, pinned))
	p.w.now = func() time.Time { return time.Now().Add(time.Hour) } // every read long after its change
	p.w.poll()
	require.Len(t, p.reloads, 1, "the same content: nothing to install")
	read, err := os.Stat(path)
	require.NoError(t, err)

	// Rewrite until the kernel's clock, which has ticks, gives the change
	// a time other than the one read.
	deadline := time.Now().Add(10 * time.Second)
	for {
		require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
		require.NoError(t, os.Chtimes(path, pinned, pinned))
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.True(t, os.SameFile(fi, read), "rewritten in place")
		require.Equal(t, read.Size(), fi.Size())
		require.Equal(t, read.ModTime(), fi.ModTime())
		if !changeTime(fi).Equal(changeTime(read)) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the change time never moved")
	}
	p.w.poll()
	require.Len(t, p.reloads, 2, "the rewrite is loaded")
	assert.Equal(t, 6, s.Resolve("u", "x").Limit)
	assert.Empty(t, p.errs)
}
