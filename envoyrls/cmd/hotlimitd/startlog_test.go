package main

import (
	"encoding/json"
	"errors"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStartErrorIsOneJSONLine: the built command, given a bad flag value or
// an address it cannot listen on, exits 1 having written one log line with
// the reason, JSON at level ERROR as its other lines, not a line of text
// after them, nor the error twice around the flags' usage; -h prints the
// usage and exits 0.
func TestStartErrorIsOneJSONLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "hotlimitd")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := t.TempDir()
	writeRule(t, dir, "2")
	taken, err := net.Listen("tcp", "127.0.0.1:0") // an address it cannot listen on
	require.NoError(t, err)
	defer taken.Close()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-drain", "5"}, `-drain "5": want a duration with its unit`},
		{[]string{"-no-such-flag"}, "flag provided but not defined: -no-such-flag"},
		{[]string{"-grpc", "nowhere"}, `-grpc "nowhere": missing port in address`},
		{[]string{"-grpc", taken.Addr().String()}, "-grpc: listen tcp " + taken.Addr().String()},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"-config", dir, "-http", ""}, tc.args...)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exits non-zero: %v", err)
			assert.Equal(t, 1, ee.ExitCode())
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			saying := 0
			for _, l := range lines {
				var rec map[string]any
				require.NoError(t, json.Unmarshal([]byte(l), &rec), "a JSON log line: %s", l)
				if e, _ := rec["err"].(string); strings.Contains(e, tc.says) || strings.Contains(l, tc.says) {
					saying++
					assert.Equal(t, "ERROR", rec["level"], l)
				}
			}
			assert.Equal(t, 1, saying, "one line says why:\n%s", stderr.String())
		})
	}
	out, err = exec.Command(bin, "-h").CombinedOutput()
	require.NoError(t, err, "-h exits 0")
	assert.Contains(t, string(out), "Usage: hotlimitd -config DIR")
	assert.Contains(t, string(out), "  -redis-tls-ca")
}
