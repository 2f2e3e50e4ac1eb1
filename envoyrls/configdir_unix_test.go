//go:build unix

package envoyrls

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadDirSkipsANamedPipe: a named pipe among the configuration files,
// directly or behind a symlink, is skipped with a warning; reading it
// would block until a writer came, and a watcher with it.
func TestLoadDirSkipsANamedPipe(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: 3}\n"), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o644))
	require.NoError(t, os.Symlink("pipe.yaml", filepath.Join(dir, "link.yaml")))
	done := make(chan error, 1)
	var cfg *Config
	go func() {
		var err error
		cfg, err = LoadDir(dir)
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		// Unblock each read of the pipe so that the goroutine ends, then fail.
		for {
			if f, err := os.OpenFile(filepath.Join(dir, "pipe.yaml"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_ = f.Close()
			}
			select {
			case <-done:
				require.FailNow(t, "LoadDir blocked on a named pipe")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	assert.Len(t, cfg.Domains(), 1)
	require.Len(t, cfg.Warnings(), 2)
	assert.Contains(t, cfg.Warnings()[0], "link.yaml: not a regular file")
	assert.Contains(t, cfg.Warnings()[1], "pipe.yaml: not a regular file")
}
