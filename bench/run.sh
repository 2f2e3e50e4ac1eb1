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
# When redis-server and redis-benchmark are on PATH, it also runs the Redis
# benchmarks of ./redisbench (redislimit against redis_rate and against
# redis-benchmark's EVALSHA of a trivial script, and the lease on a hot key;
# the test binary starts its own redis-server) and writes
# results/redis-raw.txt (go test output) and results/redis.txt (decisions/s
# table with the targets' PASS/MISS from ./cmd/redistable, and benchstat
# tables), which results/latest.txt includes. Without them it says so and
# skips that part.
#
# Knobs (environment):
#   BENCHTIME  -benchtime of every in-memory benchmark (default 50ms)
#   COUNT      runs of each benchmark (default 6; benchstat needs 4 to call a
#              difference significant and 6 for a confidence interval)
#   CPU        -cpu list of the parallel benchmarks (default 1,2,4,8)
#   MEMKEYS    keys of the memory measurement (default 1000000)
#   REDISTIME  -benchtime of the Redis benchmarks (default 500ms)
#   REDIS      auto (default): the Redis part when redis-server is found;
#              0: skip it; only: run only it (writes results/redis*.txt,
#              leaves results/latest.txt alone)
#   SMOKE=1    a quick check that everything runs: BENCHTIME=1x COUNT=1,
#              MEMKEYS=20000 with short windows, REDISTIME=1x
#
# benchstat is a tool dependency of this module (go.mod `tool` line): the first
# run downloads it from the module proxy, later runs work offline.
set -uo pipefail
cd "$(dirname "$0")"

if [[ "${SMOKE:-}" == 1 ]]; then
	BENCHTIME=${BENCHTIME:-1x} COUNT=${COUNT:-1} MEMKEYS=${MEMKEYS:-20000} REDISTIME=${REDISTIME:-1x}
	MEMFLAGS=(-window 20ms -every 300ms)
else
	MEMFLAGS=(-window 1s -every 4s)
fi
BENCHTIME=${BENCHTIME:-50ms}
COUNT=${COUNT:-6}
CPU=${CPU:-1,2,4,8}
MEMKEYS=${MEMKEYS:-1000000}
REDISTIME=${REDISTIME:-500ms}
REDIS=${REDIS:-auto}
GO=${GO:-go}

mkdir -p results
raw=results/raw.txt
out=results/latest.txt
status=0
start=$(date +%s)

# redis_part runs the Redis benchmarks and writes results/redis-raw.txt and
# results/redis.txt; without redis-server or redis-benchmark it writes only
# the reason to the latter's place in results/latest.txt ($redis_out).
redis_raw=results/redis-raw.txt
redis_txt=results/redis.txt
redis_out=
redis_part() {
	local missing= b
	for b in redis-server redis-benchmark; do
		command -v "$b" >/dev/null || missing="$missing $b"
	done
	if [[ -n $missing ]]; then
		redis_out="Redis benchmarks skipped:$missing not found on PATH (install: apt-get install -y redis-server redis-tools)"
		echo "== redis: $redis_out" >&2
		return
	fi
	# -count would run each benchmark COUNT times in a row, so that a change
	# in the machine's load between impls would bias their ratios: instead,
	# COUNT rounds of every benchmark once (each round a new redis-server).
	local args=(-run '^$' -bench '^BenchmarkRedis' -benchmem -benchtime "$REDISTIME" -count 1
		-timeout 60m ./redisbench)
	echo "== redis: $COUNT × go test ${args[*]}" >&2
	local rstatus=0 i
	: >"$redis_raw"
	for ((i = 0; i < COUNT; i++)); do
		$GO test "${args[@]}" >>"$redis_raw" 2>&1 || rstatus=1
	done
	if grep -q -- '--- FAIL' "$redis_raw"; then
		rstatus=1
	fi
	{
		echo "$(redis-server --version | cut -d' ' -f1-3), redis-benchmark at the same server; $(nproc) CPUs shared by client and server"
		echo "$COUNT rounds of: go test ${args[*]}"
		if [[ "${SMOKE:-}" == 1 ]]; then
			echo "SMOKE=1: a few decisions per benchmark; the numbers and verdicts below mean nothing"
		fi
		if [[ $rstatus != 0 ]]; then
			echo
			echo "FAILED:"
			grep -E -- '--- FAIL|^FAIL|panic:|_test\.go:[0-9]+:' "$redis_raw" | head -20
		fi
		echo
		$GO run ./cmd/redistable "$redis_raw" || rstatus=1
		echo
		echo "#### ns/op, B/op, allocs/op per decision (vs base = impl=redis_rate; impl=ceiling: 1/rps of redis-benchmark)"
		$GO tool benchstat -col '/impl@(redis_rate redislimit redislimit-nobatch ceiling)' \
			-filter '.name:Redis AND .unit:(ns/op OR B/op OR allocs/op)' "$redis_raw"
		echo
		echo "#### one hot key (vs base = impl=nolease)"
		$GO tool benchstat -col '/impl@(nolease lease)' \
			-filter '.name:RedisHotKey AND .unit:(ns/op OR B/op OR allocs/op)' "$redis_raw"
	} >"$redis_txt" 2>&1
	[[ $rstatus == 0 ]] || status=1
	redis_out=$(cat "$redis_txt")
}

case $REDIS in
auto | 1) ;;
0) redis_out="Redis benchmarks skipped: REDIS=0" ;;
only)
	redis_part
	echo "$redis_out"
	exit $status
	;;
*)
	echo "REDIS must be auto, 0 or only, not $REDIS" >&2
	exit 2
	;;
esac

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

if [[ $REDIS != 0 ]]; then
	redis_part
fi

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
	echo "### Redis: redislimit against redis_rate and a trivial script's ceiling (results/redis.txt)"
	echo "$redis_out"
	echo
	echo "wall time: $(( $(date +%s) - start ))s; exit status $status"
} >"$out" 2>&1

cat "$out"
exit $status
