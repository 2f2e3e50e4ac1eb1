package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
)

// TestLogLevelWarningKeepsWarnings: the reference's LOG_LEVEL warning is
// slog's warn, not a level above it: WARN lines (here the one for an
// unknown HOTLIMITD_ variable) are logged, INFO lines are not.
func TestLogLevelWarningKeepsWarnings(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	t.Setenv("HOTLIMITD_NO_SUCH_SETTING", "1")
	var logs redisproc.SyncBuffer
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	err := run(ctx, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-log-level", "warning"}, &logs,
		func(string, string) { stop() })
	require.NoError(t, err)
	assert.Contains(t, logs.String(), `"level":"WARN","msg":"unknown environment variable ignored`, "WARN lines at warning:\n%s", logs.String())
	assert.False(t, strings.Contains(logs.String(), `"level":"INFO"`), "no INFO lines at warning:\n%s", logs.String())
}
