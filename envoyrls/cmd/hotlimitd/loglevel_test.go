package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
)

// TestLogLevelReferenceNames: -log-level takes the reference's LOG_LEVEL
// names that slog has under another name, in any case, as logrus does:
// warning (as warn: the INFO lines are left out) and trace (as debug: they
// are kept), given on the command line or in the environment.
func TestLogLevelReferenceNames(t *testing.T) {
	dir := t.TempDir()
	writeRule(t, dir, "2")
	for _, tc := range []struct {
		level string
		env   bool
		info  bool // INFO lines are logged
	}{
		{level: "warning"},
		{level: "WARNING", env: true},
		{level: "Warning"},
		{level: "trace", info: true},
		{level: "TRACE", env: true, info: true},
	} {
		t.Run(tc.level, func(t *testing.T) {
			args := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}
			if tc.env {
				t.Setenv("HOTLIMITD_LOG_LEVEL", tc.level)
			} else {
				args = append(args, "-log-level", tc.level)
			}
			var logs redisproc.SyncBuffer
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			served := false
			err := run(ctx, args, &logs, func(string, string) { served = true; stop() })
			require.NoError(t, err)
			assert.True(t, served)
			assert.Equal(t, tc.info, strings.Contains(logs.String(), `"level":"INFO"`), "INFO lines at %s:\n%s", tc.level, logs.String())
		})
	}
}
