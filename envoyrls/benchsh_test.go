package envoyrls

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// benchShFakeGo stands in for the go command in
// TestBenchShLeavesNoTemporaryFiles: go build and go test -c write, at their
// -o path, an executable that does nothing, unless FAKE_GO_FAIL names the
// subcommand (build or test), which then fails.
const benchShFakeGo = `#!/usr/bin/env bash
case $1 in
version) echo "go version fake" ;;
build | test)
	if [[ $1 == "${FAKE_GO_FAIL:-}" ]]; then echo "go $1: failed"; exit 1; fi
	while (($#)); do
		if [[ $1 == -o ]]; then out=$2; fi
		shift
	done
	printf '#!/bin/sh\nexit 0\n' >"$out"
	chmod +x "$out"
	;;
esac
exit 0
`

// TestBenchShLeavesNoTemporaryFiles: bench.sh (make bench's last step) builds
// hotlimitd, the test binary and, from ENVOY_RATELIMIT_SRC, the reference
// server into temporary directories; none may outlive it, whether it ends
// normally or on a failed build.
func TestBenchShLeavesNoTemporaryFiles(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct {
		name, fail string
		reference  bool
	}{
		{name: "ok"},
		{name: "reference built", reference: true},
		{name: "test binary fails to build", fail: "test"},
		{name: "hotlimitd fails to build", fail: "build"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp, out := t.TempDir(), t.TempDir()
			fake := filepath.Join(t.TempDir(), "go")
			require.NoError(t, os.WriteFile(fake, []byte(benchShFakeGo), 0o755))
			src := ""
			if tc.reference {
				src = t.TempDir()
			}
			cmd := exec.Command(bash, "bench.sh")
			cmd.Env = append(os.Environ(), "GO="+fake, "TMPDIR="+tmp, "OUT="+out, "ROUNDS=1", "FAKE_GO_FAIL="+tc.fail,
				"HOTLIMITD_BENCH_REFERENCE=", "ENVOY_RATELIMIT_SRC="+src)
			log, err := cmd.CombinedOutput()
			if tc.fail == "" {
				require.NoError(t, err, "%s", log)
			} else {
				require.Error(t, err, "a failed build fails bench.sh:\n%s", log)
			}
			left, err := os.ReadDir(tmp)
			require.NoError(t, err)
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			assert.Empty(t, names, "bench.sh left these in TMPDIR")
		})
	}
}

// TestBenchShLeavesNoSummaryOfAnEarlierRun: when the test binary does not
// build, bench.sh stops before it measures anything; the summary and the
// raw output of an earlier run in OUT must not stay there as this run's,
// and it says FAILED.
func TestBenchShLeavesNoSummaryOfAnEarlierRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	out := t.TempDir()
	for _, name := range []string{"envoy-raw.txt", "envoy-summary.txt"} {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte("EARLIER RUN\n"), 0o644))
	}
	fake := filepath.Join(t.TempDir(), "go")
	require.NoError(t, os.WriteFile(fake, []byte(benchShFakeGo), 0o755))
	cmd := exec.Command(bash, "bench.sh")
	cmd.Env = append(os.Environ(), "GO="+fake, "TMPDIR="+t.TempDir(), "OUT="+out, "ROUNDS=1", "FAKE_GO_FAIL=test",
		"HOTLIMITD_BENCH_REFERENCE=", "ENVOY_RATELIMIT_SRC=")
	log, err := cmd.CombinedOutput()
	require.Error(t, err, "a failed build fails bench.sh:\n%s", log)
	assert.Contains(t, string(log), "FAILED")
	for _, name := range []string{"envoy-raw.txt", "envoy-summary.txt"} {
		text, err := os.ReadFile(filepath.Join(out, name))
		if err == nil {
			assert.NotContains(t, string(text), "EARLIER RUN", "%s is an earlier run's", name)
		}
	}
}
