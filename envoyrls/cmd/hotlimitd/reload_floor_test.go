package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
)

// TestReloadIntervalAtTheFloorStarts: -reload-interval takes its floor,
// 1ms, itself, as -help says ("at least 1ms"); only an interval between 0
// and the floor is refused.
func TestReloadIntervalAtTheFloorStarts(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	var logs redisproc.SyncBuffer
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := false
	err := run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-reload-interval", "1ms"}, &logs,
		func(string, string) { served = true; stop() })
	require.NoError(t, err)
	assert.True(t, served)
}
