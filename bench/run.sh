#!/usr/bin/env bash
# make bench: compares hotlimit's limiters with the Go limiters in use today.
#
# Runs the benchmarks of this module (serial ones at -cpu 1, parallel ones at
# -cpu $CPU), the frozen-clock cross-check and the bytes-per-key measurement,
# then writes results/raw.txt (go test output), results/scaling.svg (ns/op
# against goroutines) and results/latest.txt (everything: benchstat tables
# of ns/op, B/op and allocs/op with deltas against impl=mutex, medians and
# ratios, memory table), and prints results/latest.txt.
#
# Knobs (environment):
#   BENCHTIME  -benchtime of every benchmark (default 50ms)
#   COUNT      runs of each benchmark (default 6; benchstat needs 4 to call a
#              difference significant and 6 for a confidence interval)
#   CPU        -cpu list of the parallel benchmarks (default 1,2,4,8)
#   MEMKEYS    keys of the memory measurement (default 1000000)
#   SMOKE=1    a quick check that everything runs: BENCHTIME=1x COUNT=1,
#              MEMKEYS=20000 with short windows
#
# benchstat is a tool dependency of this module (go.mod `tool` line): the first
# run downloads it from the module proxy, later runs work offline.
set -uo pipefail
cd "$(dirname "$0")"

if [[ "${SMOKE:-}" == 1 ]]; then
	BENCHTIME=${BENCHTIME:-1x} COUNT=${COUNT:-1} MEMKEYS=${MEMKEYS:-20000}
	MEMFLAGS=(-window 20ms -every 300ms)
else
	MEMFLAGS=(-window 1s -every 4s)
fi
BENCHTIME=${BENCHTIME:-50ms}
COUNT=${COUNT:-6}
CPU=${CPU:-1,2,4,8}
MEMKEYS=${MEMKEYS:-1000000}
GO=${GO:-go}

mkdir -p results
raw=results/raw.txt
out=results/latest.txt
status=0
start=$(date +%s)

serial=(-run '^$' -bench '^(BenchmarkAllow|BenchmarkParts)$/^(mode=serial|part=)' -benchmem
	-benchtime "$BENCHTIME" -count "$COUNT" -cpu 1 -timeout 60m .)
parallel=(-run '^$' -bench '^(BenchmarkAllow|BenchmarkInsert)$/^mode=parallel' -benchmem
	-benchtime "$BENCHTIME" -count "$COUNT" -cpu "$CPU" -timeout 60m .)

echo "== benchmarks: go test ${serial[*]}" >&2
$GO test "${serial[@]}" >"$raw" 2>&1 || status=1
echo "== benchmarks: go test ${parallel[*]}" >&2
$GO test "${parallel[@]}" >>"$raw" 2>&1 || status=1
if grep -q -- '--- FAIL' "$raw"; then
	status=1
fi

echo "== cross-check: go test -run '^TestCrossCheck\$' -v -count 1 ." >&2
cross=$($GO test -run '^TestCrossCheck$' -v -count 1 . 2>&1) || status=1

echo "== memory: go run ./cmd/memory -keys $MEMKEYS ${MEMFLAGS[*]}" >&2
mem=$($GO run ./cmd/memory -keys "$MEMKEYS" "${MEMFLAGS[@]}" 2>&1) || status=1

$GO run ./cmd/chart -o results/scaling.svg "$raw" || status=1

hotlimit='mutex OR tokenbucket OR fixedwindow OR slidinglog OR gcra OR slidingcounter OR coarse OR service'
peers='mutex OR xtime OR golimiter OR throttled OR ulule'
units='.unit:(ns/op OR B/op OR allocs/op)'
{
	echo "hotlimit bench — $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "$($GO version); $(nproc) CPUs; $(grep -m1 '^cpu:' "$raw" | sed 's/^cpu: *//')"
	echo "go test ${serial[*]}"
	echo "go test ${parallel[*]}"
	echo
	echo "### hotlimit against the mutex baseline (ns/op, B/op, allocs/op; vs base = impl=mutex)"
	$GO tool benchstat -col '/impl@(mutex tokenbucket fixedwindow slidinglog gcra slidingcounter coarse service)' \
		-filter "$units AND /impl:($hotlimit)" "$raw"
	echo
	echo "### peers against the mutex baseline"
	$GO tool benchstat -col '/impl@(mutex xtime golimiter throttled ulule)' \
		-filter "$units AND /impl:($peers)" "$raw"
	echo
	echo "### the parts of a decision (serial)"
	$GO tool benchstat -filter '.name:Parts AND .unit:ns/op' "$raw"
	echo
	echo "### medians of ns/op and ratio to impl=mutex"
	$GO run ./cmd/chart -table "$raw"
	echo
	echo "### allowed/op: hit=mixed (Zipf), and any run that allowed or denied what its policy should not"
	grep -E '^Benchmark.*allowed/op' "$raw" |
		awk '{ v = ""; for (i = 3; i < NF; i++) if ($(i+1) == "allowed/op") v = $i
		       name = $1; sub(/^Benchmark/, "", name); cpu = 1
		       if (match(name, /-[0-9]+$/)) { cpu = substr(name, RSTART + 1); name = substr(name, 1, RSTART - 1) }
		       if (name ~ /hit=mixed/ || (name ~ /hit=allow/ && v != 1) || (name ~ /hit=deny/ && v != 0))
		           print name " -cpu " cpu ":", v }' |
		awk '{ k = $1 " " $2 " " $3; a[k] = a[k] " " $4 } END { for (k in a) print k a[k] }' | sort -k1,1 -k3,3n
	grep -E 'calls (denied|allowed)$' "$raw" | sed 's/^ *//' | sort | uniq -c | sort -rn | head -20
	echo
	echo "### cross-check: N goroutines hammer new keys of limit L with a frozen clock (or 1 h window)"
	echo "$cross" | grep -E 'summary|FAIL|^(ok|PASS)' | sed 's/^ *//'
	echo
	echo "### memory"
	echo "$mem"
	echo
	echo "wall time: $(( $(date +%s) - start ))s; exit status $status"
} >"$out" 2>&1

cat "$out"
exit $status
