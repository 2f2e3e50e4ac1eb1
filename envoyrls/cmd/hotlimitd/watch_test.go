package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWaitsForTheWatcher: run returns only once the config directory's
// watcher has returned, so that a reload under way when the signal comes
// (here one that takes 200 ms past it) ends, and is logged, before the
// process exits or the Redis client closes, never after.
func TestRunWaitsForTheWatcher(t *testing.T) {
	saved := watchDir
	t.Cleanup(func() { watchDir = saved })
	var started, finished atomic.Bool
	watchDir = func(s *envoyrls.Server, ctx context.Context, dir string, interval time.Duration, onLoad func(error)) {
		started.Store(true)
		s.WatchDir(ctx, dir, interval, onLoad)
		time.Sleep(200 * time.Millisecond) // a reload in progress, not a wait for a condition
		finished.Store(true)
	}
	dir := t.TempDir()
	writeRule(t, dir, "2")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "127.0.0.1:0", "-reload-interval", "1h"}, &redisproc.SyncBuffer{})
	srv.stop(t)
	require.True(t, started.Load(), "the watcher ran")
	assert.True(t, finished.Load(), "run returned before the watcher did")
}
