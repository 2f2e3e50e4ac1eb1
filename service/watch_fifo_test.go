//go:build linux || darwin

package service_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestWatchFileRefusesAFileThatIsNotRegular puts a named pipe at the path:
// reading it would block until some writer came, beyond the context's end,
// just as a device such as /dev/zero would be read without end. The watcher
// reports it as an error, keeps the rules and returns when told to.
func TestWatchFileRefusesAFileThatIsNotRegular(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	t.Cleanup(func() {
		// Releases a reader still blocked on the pipe, so that a failing
		// run ends.
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			_ = f.Close()
		}
	})
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 3))
	before := s.Rules()
	var errs errorLog
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchFileWith(ctx, path, service.WatchOptions{Interval: 2 * time.Millisecond, OnError: errs.add})
	}()
	require.Eventually(t, func() bool { return len(errs.get()) > 0 }, 5*time.Second, time.Millisecond,
		"a named pipe is reported")
	assert.Contains(t, errs.get()[0], "not a regular file")
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("WatchFileWith did not return when its context ended")
	}
	assert.Equal(t, before, s.Rules())
	assert.Len(t, errs.get(), 1, "reported once")
}
