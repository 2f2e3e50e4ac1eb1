package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
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
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), fakeGo)
	assert.Contains(t, summary, "FAILED: see ")
	assert.Contains(t, summary, "hotkey-raw.txt", "the FAILED line names the file")
	assert.Contains(t, summary, "--- FAIL: BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow")
}

// loggingGo stands in for the go command in TestRunTimesTheImplementationsInRounds:
// it appends the -bench pattern and -count of every go test to $GO_LOG.
const loggingGo = `#!/usr/bin/env bash
if [[ $1 == version ]]; then echo "go version fake"; exit 0; fi
if [[ $1 == test ]]; then
	bench= count=
	while (($#)); do
		case $1 in
		-bench) bench=$2 ;;
		-count) count=$2 ;;
		esac
		shift
	done
	[[ -n $bench ]] && echo "$bench $count" >>"$GO_LOG"
fi
exit 0
`

// TestRunTimesTheImplementationsInRounds: run.sh runs the in-memory
// benchmarks whose runs the summary pairs (serial, hot key, 100k keys) in
// COUNT rounds of one run each, not as -count COUNT, which would time each
// implementation's runs back to back, minutes away from the runs they are
// paired with.
func TestRunTimesTheImplementationsInRounds(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "go.log")
	out, err := runWithFakeGo(t, dir, loggingGo, "GO_LOG="+logPath, "COUNT=3")
	require.NoError(t, err, "%s", out)
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	var paired []string
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		bench, count, _ := strings.Cut(line, " ")
		if strings.Contains(bench, "BenchmarkAllow") {
			assert.Equal(t, "1", count, "go test -bench %s runs once per round", bench)
			paired = append(paired, bench)
		}
	}
	require.Len(t, paired, 9, "3 rounds of serial, hot key and 100k keys:\n%s", log)
	for round := 1; round < 3; round++ {
		assert.Equal(t, paired[:3], paired[3*round:3*round+3], "round %d runs what round 1 ran, in order", round+1)
	}
	assert.Len(t, slices.Compact(slices.Clone(paired[:3])), 3, "a round runs three different benchmarks")
}

// runWithFakeGo runs a copy of run.sh in dir, with fake, a bash script, as
// its go command, the Redis part off, writing to dir/out, and env added to
// its environment; it returns the script's output and exit error.
func runWithFakeGo(t *testing.T, dir, fake string, env ...string) ([]byte, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	script, err := os.ReadFile("run.sh")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), script, 0o755))
	goPath := filepath.Join(dir, "fakego")
	require.NoError(t, os.WriteFile(goPath, []byte(fake), 0o755))
	cmd := exec.Command(bash, filepath.Join(dir, "run.sh"))
	cmd.Env = append(os.Environ(), "GO="+goPath, "REDIS=0", "PUBLISH=", "SMOKE=")
	cmd.Env = append(cmd.Env, env...)
	return cmd.CombinedOutput()
}

// failedSummary runs run.sh in dir with the fake go command, as
// runWithFakeGo does, requires it to fail, and returns the summary it wrote
// in out, its output directory.
func failedSummary(t *testing.T, dir, out, fake string, env ...string) string {
	t.Helper()
	log, err := runWithFakeGo(t, dir, fake, env...)
	require.Error(t, err, "run.sh exits 1 on a failed step:\n%s", log)
	summary, err := os.ReadFile(filepath.Join(out, "summary.txt"))
	require.NoError(t, err)
	return string(summary)
}

// failedSection returns what follows summary's "FAILED: see " line.
func failedSection(t *testing.T, summary string) string {
	t.Helper()
	_, failed, ok := strings.Cut(summary, "\nFAILED: see ")
	require.True(t, ok, "a FAILED section in:\n%s", summary)
	return failed
}

// failingStepsGo stands in for the go command in
// TestRunSummaryShowsNoResultsOfAnEarlierRun: cmd/memory, cmd/flood and
// cmd/chart fail before writing their files, every other command succeeds at
// once, and cmd/summary prints the files it is given, as the real one
// summarizes them.
const failingStepsGo = `#!/usr/bin/env bash
if [[ $1 == version ]]; then echo "go version fake"; exit 0; fi
if [[ $1 == run ]]; then
	case $2 in
	./cmd/memory | ./cmd/flood | ./cmd/chart)
		echo "${2#./cmd/}: failed"
		exit 1
		;;
	./cmd/summary)
		shift 2
		for f; do [[ -f $f ]] && cat "$f"; done
		;;
	esac
fi
exit 0
`

// TestRunSummaryShowsNoResultsOfAnEarlierRun: when cmd/memory, cmd/flood or
// cmd/chart fails, the files it writes on success must not survive from an
// earlier run in the same directory, where the summary would show their
// numbers (and the README link their chart) as this run's.
func TestRunSummaryShowsNoResultsOfAnEarlierRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	earlier := map[string]string{
		"memory-raw.txt": "BenchmarkMemory/impl=tokenbucket 1 99.0 B/key 0 B/key-evicted 1000000 keys EARLIER RUN\n",
		"flood-raw.txt":  "BenchmarkFlood/impl=service 1 900.0 ns/pair 10000000 pairs EARLIER RUN\n",
		"scaling.svg":    "<svg>EARLIER RUN</svg>\n",
	}
	for name, text := range earlier {
		require.NoError(t, os.WriteFile(filepath.Join(out, name), []byte(text), 0o644))
	}
	summary := failedSummary(t, dir, out, failingStepsGo)
	assert.NotContains(t, summary, "EARLIER RUN", "the summary shows an earlier run's numbers")
	assert.Contains(t, summary, "FAILED: see ")
	assert.Contains(t, summary, "chart: none, cmd/chart failed", "the summary names no chart")
	for name := range earlier {
		assert.NoFileExists(t, filepath.Join(out, name), "a failed step leaves an earlier run's %s", name)
	}
}

// buildFailGo stands in for the go command in
// TestRunSummarySaysTheCrossCheckFailed and
// TestRunSummaryQuotesBuildFailures: the cross-check's test binary does not
// build, cmd/memory's packages do not load (as without the module proxy),
// the go command refuses to run the auto-sweep benchmark, every other
// command succeeds at once.
const buildFailGo = `#!/usr/bin/env bash
if [[ $1 == version ]]; then echo "go version fake"; exit 0; fi
case " $* " in
*TestCrossCheck*)
	echo "# github.com/hotlimit/hotlimit/bench [github.com/hotlimit/hotlimit/bench.test]"
	echo "./crosscheck_test.go:9:2: undefined: frozenClock"
	echo "FAIL	github.com/hotlimit/hotlimit/bench [build failed]"
	exit 1
	;;
*" run ./cmd/memory "*)
	echo "go: downloading github.com/sethvargo/go-limiter v0.7.1"
	echo "internal/impl/peers.go:9:2: module lookup disabled by GOPROXY=off"
	exit 1
	;;
*BenchmarkAutoSweep*)
	echo "go: downloading github.com/ulule/limiter/v3 v3.11.2"
	echo "go: updates to go.mod needed; to update it:"
	exit 1
	;;
esac
exit 0
`

// TestRunSummarySaysTheCrossCheckFailed: a cross-check that did not run to
// its end (a build failure, a timeout) has no "--- FAIL" line to count; its
// line in the summary must say that it failed, not "0 failures".
func TestRunSummarySaysTheCrossCheckFailed(t *testing.T) {
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), buildFailGo)
	line := ""
	for l := range strings.SplitSeq(summary, "\n") {
		if strings.HasPrefix(l, "cross-check") {
			line = l
		}
	}
	require.NotEmpty(t, line, "a cross-check line in:\n%s", summary)
	assert.NotContains(t, line, "0 failures")
	assert.Contains(t, line, "FAILED")
}

// TestRunSummaryQuotesBuildFailures: the FAILED section quotes why a step
// failed when its code did not build or its packages did not load, as it
// does for a failed test: the compiler's or the go command's error.
func TestRunSummaryQuotesBuildFailures(t *testing.T) {
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), buildFailGo)
	failed := failedSection(t, summary)
	assert.Contains(t, failed, "./crosscheck_test.go:9:2: undefined: frozenClock")
	assert.Contains(t, failed, "internal/impl/peers.go:9:2: module lookup disabled by GOPROXY=off")
	assert.Contains(t, failed, "go: updates to go.mod needed")
	assert.NotContains(t, failed, "go: downloading", "a download is no error")
}

// TestRunSummaryQuotesNoRedisFailureOfAnEarlierRun: when the Redis part is
// skipped (no redis-server on PATH), redis-raw.txt is an earlier run's: the
// FAILED section of a run that failed elsewhere must neither name it nor
// quote its failures.
func TestRunSummaryQuotesNoRedisFailureOfAnEarlierRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(out, "redis-raw.txt"),
		[]byte("--- FAIL: BenchmarkRedis/g=1/impl=redislimit\n    redis_test.go:1: EARLIER RUN\n"), 0o644))
	summary := failedSummary(t, dir, out, buildFailGo, "REDIS=auto", "PATH="+pathWithout(t, "redis-server", "redis-benchmark"))
	require.Contains(t, summary, "Redis benchmarks skipped: redis-server redis-benchmark not found", "the Redis part was skipped")
	failed := failedSection(t, summary)
	assert.NotContains(t, failed, "EARLIER RUN")
	assert.NotContains(t, failed, "redis-raw.txt")
}

// pathWithout returns a PATH of one directory that holds the commands run.sh
// and the fake go commands use, and none of the commands named in without.
func pathWithout(t *testing.T, without ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"bash", "env", "cat", "cut", "date", "dirname", "mkdir", "rm", "grep", "sed",
		"awk", "sort", "uniq", "head", "nproc", "uptime"} {
		require.NotContains(t, without, name)
		p, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		require.NoError(t, os.Symlink(p, filepath.Join(dir, name)))
	}
	for _, name := range without {
		_, err := exec.LookPath(filepath.Join(dir, name))
		require.Error(t, err, "%s is not on the PATH", name)
	}
	return dir
}

// memoryOKGo stands in for the go command in
// TestRunSummaryQuotesOnlyTheStepsThatFailed: the hot-key blocks' benchmark
// fails; cmd/memory and cmd/flood succeed, printing the first lines of
// their tables; every other command succeeds at once.
const memoryOKGo = `#!/usr/bin/env bash
case " $* " in
*" version "*) echo "go version fake" ;;
*BenchmarkHotKeyRatio*)
	echo "--- FAIL: BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow"
	echo "    hotkey.go:1: calls pass"
	exit 1
	;;
*" run ./cmd/memory "*)
	echo "memory: 1000 keys, one request each, policy 100/1s; bytes are heap bytes per key"
	;;
*" run ./cmd/flood "*)
	echo "flood: this line is no error"
	echo "end: heap +9.0 MB (peak +9.0 MB) for 65533 pairs held"
	;;
esac
exit 0
`

// TestRunSummaryQuotesOnlyTheStepsThatFailed: the FAILED section quotes the
// output of cmd/memory and cmd/flood only when they failed; the first line
// of a memory table that went well is no error.
func TestRunSummaryQuotesOnlyTheStepsThatFailed(t *testing.T) {
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), memoryOKGo)
	failed := failedSection(t, summary)
	assert.Contains(t, failed, "--- FAIL: BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow")
	assert.NotContains(t, failed, "memory: 1000 keys")
	assert.NotContains(t, failed, "this line is no error")
}

// noBenchstatGo stands in for the go command in
// TestRunFailsWhenATableDoesNotPrint: benchstat cannot be downloaded (as on
// a first run without the module proxy), every other command succeeds at
// once.
const noBenchstatGo = `#!/usr/bin/env bash
if [[ $1 == version ]]; then echo "go version fake"; exit 0; fi
if [[ $1 == tool && $2 == benchstat ]]; then
	echo "go: downloading golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da" >&2
	echo "golang.org/x/perf/cmd/benchstat: module lookup disabled by GOPROXY=off" >&2
	exit 1
fi
exit 0
`

// TestRunFailsWhenATableDoesNotPrint: when benchstat, which prints
// latest.txt's tables, fails, run.sh exits non-zero and its summary says
// FAILED and names latest.txt, where the error is, rather than passing a
// latest.txt without its tables off as a good run (with PUBLISH=1, into
// results/).
func TestRunFailsWhenATableDoesNotPrint(t *testing.T) {
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), noBenchstatGo)
	failed := failedSection(t, summary)
	assert.Contains(t, failed, "go tool benchstat")
	assert.Contains(t, failed, "latest.txt")
	latest, err := os.ReadFile(filepath.Join(dir, "out", "latest.txt"))
	require.NoError(t, err)
	assert.Contains(t, string(latest), "module lookup disabled by GOPROXY=off", "latest.txt keeps the error")
}

// TestRunRedisOnlyFailsWhenATableDoesNotPrint: REDIS=only prints redis.txt
// and exits with the Redis part's status; a table that did not print there
// (benchstat not downloaded) fails it and says FAILED, as a failed benchmark
// does, rather than exiting 0 with the go command's error in its place.
func TestRunRedisOnlyFailsWhenATableDoesNotPrint(t *testing.T) {
	dir := t.TempDir()
	tools := t.TempDir()
	for _, name := range []string{"redis-server", "redis-benchmark"} {
		require.NoError(t, os.WriteFile(filepath.Join(tools, name),
			[]byte("#!/usr/bin/env bash\necho \"Redis server v=7.0.15 sha=00000000:0\"\n"), 0o755))
	}
	log, err := runWithFakeGo(t, dir, noBenchstatGo, "REDIS=only", "PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"))
	require.Error(t, err, "REDIS=only exits 1 when a table did not print:\n%s", log)
	assert.Contains(t, string(log), "FAILED")
	assert.Contains(t, string(log), "module lookup disabled by GOPROXY=off", "the error is printed")
}

// crossFailGo stands in for the go command in
// TestRunSummaryCountsTheCrossCheckFailures: one implementation of the
// cross-check fails (go test -v prints its subtest's "--- FAIL" line and
// then its parent's), every other command succeeds at once.
const crossFailGo = `#!/usr/bin/env bash
if [[ $1 == version ]]; then echo "go version fake"; exit 0; fi
case " $* " in
*TestCrossCheck*)
	echo "=== RUN   TestCrossCheck"
	echo "=== RUN   TestCrossCheck/impl=mutex"
	echo "=== RUN   TestCrossCheck/impl=xtime"
	echo "    crosscheck_test.go:50: admitted 11, want 10"
	echo "--- FAIL: TestCrossCheck (0.10s)"
	echo "    --- PASS: TestCrossCheck/impl=mutex (0.05s)"
	echo "    --- FAIL: TestCrossCheck/impl=xtime (0.05s)"
	echo "FAIL"
	exit 1
	;;
esac
exit 0
`

// TestRunSummaryCountsTheCrossCheckFailures: the summary's cross-check line
// counts the implementations that failed, not their parent test's
// "--- FAIL" line as one more.
func TestRunSummaryCountsTheCrossCheckFailures(t *testing.T) {
	dir := t.TempDir()
	summary := failedSummary(t, dir, filepath.Join(dir, "out"), crossFailGo)
	assert.Contains(t, summary, "cross-check (frozen clock, N goroutines on new keys): FAILED, failed tests: 1;")
}
