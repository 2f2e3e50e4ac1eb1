package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeGo stands in for the go command in TestRunSummaryShowsTheFailingHotKeyStep:
// the hot-key blocks' benchmark fails, every other command succeeds at once.
const fakeGo = `#!/usr/bin/env bash
case " $* " in
*" version "*) echo "go version fake" ;;
*BenchmarkHotKeyRatio*)
	echo "--- FAIL: BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow"
	echo "    hotkey.go:1: calls pass"
	exit 1
	;;
esac
exit 0
`

// TestRunSummaryShowsTheFailingHotKeyStep: when BenchmarkHotKeyRatio fails,
// run.sh's summary says FAILED and quotes the failure, as it does for every
// other step's.
func TestRunSummaryShowsTheFailingHotKeyStep(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	script, err := os.ReadFile("run.sh")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), script, 0o755))
	goPath := filepath.Join(dir, "fakego")
	require.NoError(t, os.WriteFile(goPath, []byte(fakeGo), 0o755))
	cmd := exec.Command(bash, filepath.Join(dir, "run.sh"))
	cmd.Env = append(os.Environ(), "GO="+goPath, "REDIS=0", "PUBLISH=", "SMOKE=")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "run.sh exits 1 on a failed step:\n%s", out)
	summary, err := os.ReadFile(filepath.Join(dir, "out", "summary.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "FAILED: see ")
	assert.Contains(t, string(summary), "hotkey-raw.txt", "the FAILED line names the file")
	assert.Contains(t, string(summary), "--- FAIL: BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow")
}
