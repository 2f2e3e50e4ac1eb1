//go:build linux || darwin

package service

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchFileRefusesANamedPipeRenamedOverTheFileAsItIsChecked: a named
// pipe renamed over the path after the watcher found a regular file there,
// and before it opened it, is refused as one found at once is: opening it
// for reading would wait for a writer, past the context's end and Close.
func TestWatchFileRefusesANamedPipeRenamedOverTheFileAsItIsChecked(t *testing.T) {
	s, p, path := watchedService(t)
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.WriteFile(path, []byte(watchedB), 0o600))
	t.Cleanup(func() {
		// Releases a reader still waiting on the pipe, so that a failing
		// run ends.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	p.w.changed = func(fi os.FileInfo) time.Time {
		// Called between the watcher's stat of the path and its read.
		assert.NoError(t, os.Rename(fifo, path))
		p.w.changed = nil
		return changeTime(fi)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.w.poll()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher waits for a writer of the named pipe")
	}
	require.Len(t, p.errs, 1)
	assert.ErrorContains(t, p.errs[0], "not a regular file")
	assert.Len(t, p.reloads, 1, "nothing installed")
	assert.Equal(t, 4, s.Resolve("u", "x").Limit, "the rules in force stay")
}
