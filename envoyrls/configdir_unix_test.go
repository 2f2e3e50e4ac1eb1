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

// TestLoadDirSkipsABrokenSymlinkItWouldNotRead: a symbolic link that
// leads nowhere, under a name that is not a YAML file's, is named in a
// warning as the other entries not read are, where it made the whole
// directory fail to load (hotlimitd not start, a reload be refused). Under a
// YAML file's name it is a configuration file that cannot be read: an error
// naming it.
func TestLoadDirSkipsABrokenSymlinkItWouldNotRead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"),
		[]byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "current")))
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, cfg.Domains(), 1)
	require.Len(t, cfg.Warnings(), 1)
	assert.Contains(t, cfg.Warnings()[0], filepath.Join(dir, "current")+": a symbolic link to nothing readable, not read")

	require.NoError(t, os.Symlink(filepath.Join(dir, "gone"), filepath.Join(dir, "b.yaml")))
	_, err = LoadDir(dir)
	assert.ErrorContains(t, err, filepath.Join(dir, "b.yaml"))
}
