#!/usr/bin/env bash
# make bench: compares hotlimit's limiters with the Go limiters in use today
# and prints a short summary: at a glance, tokenbucket against
# the fastest peer and the mutex port, faster or slower when every run
# agrees; then for every scenario, each algorithm's ns/op as a
# ratio to the mutex port and to the fastest peer, with the range across runs;
# the coarse clock with its admission error; the latency of one Allow with
# auto-sweep on; bytes per idle key (see cmd/summary).
#
# Steps, each timed on stderr:
#   1. in-memory benchmarks (go test -bench), $COUNT rounds of each once:
#      serial ones at -cpu 1, one hot key at -cpu $CPU, 100k keys and new
#      keys at -cpu $MANYCPU; then the hot
#      key again with each algorithm and the mutex port in alternating blocks
#      (BenchmarkHotKeyRatio) at -cpu $CPU → raw.txt, hotkey-raw.txt
#   2. auto-sweep latency: BenchmarkAutoSweep, $SWEEPKEYS new keys, $SWEEPCOUNT
#      runs → sweep-raw.txt
#   3. the frozen-clock cross-check (TestCrossCheck) → cross.txt
#   4. heap bytes per key after $MEMKEYS keys (cmd/memory) → memory.txt,
#      memory-raw.txt
#   4b. the service at scale: BenchmarkService, service against the bare token
#      bucket at $SERVICEPAIRS pairs, -cpu $MANYCPU (ns/op, B/pair) →
#      service-raw.txt; $FLOODPAIRS distinct idle pairs through a default
#      service (cmd/flood: heap at the end against the pairs held) →
#      flood.txt, flood-raw.txt
#   5. Redis, when redis-server and redis-benchmark are on PATH (see below)
#      → redis-raw.txt, redis.txt
#   6. chart (cmd/chart) → scaling.svg; full tables (benchstat: ns/op, B/op,
#      allocs/op against impl=mutex; medians; allowed/op; cross-check; memory;
#      Redis) → latest.txt; summary (cmd/summary) → summary.txt
# then prints summary.txt.
#
# Everything goes to out/ (git-ignored), unless PUBLISH=1: then to results/,
# whose files are tracked and quoted by the README.
#
# The Redis part runs the benchmarks of ./redisbench (redislimit against
# redis_rate and against redis-benchmark's EVALSHA of a trivial script, and
# the lease on a hot key; the test binary starts its own redis-server) in
# $REDISCOUNT rounds and tabulates them with ./cmd/redistable. Without
# redis-server or redis-benchmark it says so and skips that part.
#
# Knobs (environment):
#   PUBLISH=1   write to results/ instead of out/
#   BENCHTIME   -benchtime of every in-memory benchmark (default 50ms)
#   COUNT       runs of each in-memory benchmark (default 5; the summary's
#               ranges are across these runs), in rounds (see step 1)
#   CPU         -cpu list of the hot-key benchmarks (default 1,2,4,8)
#   MANYCPU     -cpu list of the 100k-key and new-key benchmarks (default 2,8)
#   SWEEPKEYS   new keys of the auto-sweep latency run (default 2000000)
#   SWEEPCOUNT  its runs (default 3)
#   SWEEPIMPL   its algorithms, a regexp (default tokenbucket|tokenbucket-nogc|tokenbucket-maxkeys|alloc-only;
#               .* for all)
#   MEMKEYS     keys of the memory measurement (default 1000000)
#   SERVICEPAIRS pair counts of BenchmarkService (default 100000,1000000)
#   FLOODPAIRS  distinct pairs of cmd/flood (default 10000000)
#   REDISTIME   -benchtime of the Redis benchmarks (default 500ms)
#   REDISCOUNT  rounds of the Redis benchmarks (default $COUNT)
#   REDIS       auto (default): the Redis part when redis-server is found;
#               0: skip it; only: run only it (and print its table)
#   SMOKE=1     a quick check that everything runs: BENCHTIME=1x COUNT=1,
#               SWEEPKEYS=20000, MEMKEYS=20000 with short windows,
#               SERVICEPAIRS=1000,10000, FLOODPAIRS=100000, REDISTIME=1x; the
#               numbers mean nothing
#
# benchstat is a tool dependency of this module (go.mod `tool` line): the first
# run downloads it from the module proxy, later runs work offline.
set -uo pipefail
cd "$(dirname "$0")"

if [[ "${SMOKE:-}" == 1 ]]; then
	BENCHTIME=${BENCHTIME:-1x} COUNT=${COUNT:-1} MEMKEYS=${MEMKEYS:-20000} REDISTIME=${REDISTIME:-1x}
	SWEEPKEYS=${SWEEPKEYS:-20000} SWEEPCOUNT=${SWEEPCOUNT:-1}
	SERVICEPAIRS=${SERVICEPAIRS:-1000,10000} FLOODPAIRS=${FLOODPAIRS:-100000}
	MEMFLAGS=(-window 20ms -every 300ms)
else
	MEMFLAGS=(-window 1s -every 4s)
fi
BENCHTIME=${BENCHTIME:-50ms}
COUNT=${COUNT:-5}
CPU=${CPU:-1,2,4,8}
MANYCPU=${MANYCPU:-2,8}
SWEEPKEYS=${SWEEPKEYS:-2000000}
SWEEPCOUNT=${SWEEPCOUNT:-3}
SWEEPIMPL=${SWEEPIMPL:-tokenbucket|tokenbucket-nogc|tokenbucket-maxkeys|alloc-only}
MEMKEYS=${MEMKEYS:-1000000}
SERVICEPAIRS=${SERVICEPAIRS:-100000,1000000}
FLOODPAIRS=${FLOODPAIRS:-10000000}
REDISTIME=${REDISTIME:-500ms}
REDISCOUNT=${REDISCOUNT:-$COUNT}
REDIS=${REDIS:-auto}
GO=${GO:-go}

if [[ "${PUBLISH:-}" == 1 ]]; then
	dir=results
else
	dir=out
fi
mkdir -p "$dir"
raw=$dir/raw.txt
out=$dir/latest.txt
status=0
start=$(date +%s)
# load: the load averages (1, 5, 15 min) now, to tell a busy machine apart.
load() { cut -d" " -f1-3 /proc/loadavg 2>/dev/null || uptime | sed 's/.*load averages*: *//'; }
load_start=$(load)

# step WHAT: says on stderr what runs next, and when.
step() {
	echo "== $(($(date +%s) - start))s: $1" >&2
}

# redis_part runs the Redis benchmarks and writes redis-raw.txt and redis.txt;
# without redis-server or redis-benchmark it writes only the reason to the
# latter's place in latest.txt ($redis_out).
redis_raw=$dir/redis-raw.txt
redis_txt=$dir/redis.txt
redis_out=
redis_ran= # 1 once redis_part runs the benchmarks: redis-raw.txt is this run's
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
	# -count would run each benchmark REDISCOUNT times in a row, so that a
	# change in the machine's load between impls would bias their ratios:
	# instead, REDISCOUNT rounds of every benchmark once (each round a new
	# redis-server).
	local args=(-run '^$' -bench '^BenchmarkRedis' -benchmem -benchtime "$REDISTIME" -count 1
		-timeout 60m ./redisbench)
	step "redis: $REDISCOUNT × go test ${args[*]}"
	local rstatus=0 rtables= i
	redis_ran=1
	: >"$redis_raw"
	for ((i = 0; i < REDISCOUNT; i++)); do
		$GO test "${args[@]}" >>"$redis_raw" 2>&1 || rstatus=1
	done
	if grep -q -- '--- FAIL' "$redis_raw"; then
		rstatus=1
	fi
	{
		echo "$(redis-server --version | cut -d' ' -f1-3), redis-benchmark at the same server; $(nproc) CPUs shared by client and server"
		echo "$REDISCOUNT rounds of: go test ${args[*]}"
		if [[ "${SMOKE:-}" == 1 ]]; then
			echo "SMOKE=1: a few decisions per benchmark; the numbers and verdicts below mean nothing"
		fi
		if [[ $rstatus != 0 ]]; then
			echo
			echo "FAILED:"
			grep -E -- '--- FAIL|^FAIL|panic:|_test\.go:[0-9]+:' "$redis_raw" | head -20
		fi
		echo
		# A table that does not print (benchstat's module not downloaded)
		# leaves the go command's error in its place.
		$GO run ./cmd/redistable "$redis_raw" || rtables="$rtables cmd/redistable's;"
		echo
		echo "#### ns/op, B/op, allocs/op per decision (vs base = impl=redis_rate; impl=ceiling: 1/rps of redis-benchmark)"
		$GO tool benchstat -col '/impl@(redis_rate redislimit redislimit-nobatch ceiling)' \
			-filter '.name:Redis AND .unit:(ns/op OR B/op OR allocs/op)' "$redis_raw" || rtables="$rtables per decision (benchstat);"
		echo
		echo "#### one hot key (vs base = impl=nolease)"
		$GO tool benchstat -col '/impl@(nolease lease)' \
			-filter '.name:RedisHotKey AND .unit:(ns/op OR B/op OR allocs/op)' "$redis_raw" || rtables="$rtables one hot key (benchstat);"
		if [[ -n $rtables ]]; then
			echo
			echo "FAILED: tables that did not print (the error is in their place):${rtables%;}"
		fi
	} >"$redis_txt" 2>&1
	[[ $rstatus == 0 && -z $rtables ]] || status=1
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

# The benchmark name's levels are split at "/": Allow/mode=…/keys=…/hit=…/impl=…
# -count would run each implementation's COUNT runs back to back, so that a
# change in the machine's speed between implementations (a neighbour's load,
# a few minutes apart) would bias every ratio the same way, with a narrow
# range: instead, COUNT rounds of serial, hot and many, each benchmark once
# per round, so that the runs a ratio pairs (run i against run i) are seconds
# apart.
common=(-run '^$' -benchmem -benchtime "$BENCHTIME" -count 1 -timeout 60m .)
serial=(-bench '^(BenchmarkAllow|BenchmarkParts)$/^(mode=serial|part=)' -cpu 1 "${common[@]}")
hot=(-bench '^BenchmarkAllow$/^mode=parallel$/^keys=1$' -cpu "$CPU" "${common[@]}")
# (no -benchmem: its allocations are the harness's, a few per block)
ratio=(-bench '^BenchmarkHotKeyRatio$' -cpu "$CPU" -run '^$' -benchtime "$BENCHTIME" -count "$COUNT" -timeout 60m .)
many=(-bench '^(BenchmarkAllow|BenchmarkInsert)$/^mode=parallel$/^(keys=100000|impl=.*)$' -cpu "$MANYCPU" "${common[@]}")
sweep=(-run '^$' -bench "^BenchmarkAutoSweep\$/^impl=($SWEEPIMPL)\$" -benchmem -benchtime "${SWEEPKEYS}x"
	-count "$SWEEPCOUNT" -cpu 1 -timeout 60m .)
svc=(-run '^$' -bench '^BenchmarkService$' -benchmem -benchtime "$BENCHTIME" -count "$COUNT" -cpu "$MANYCPU"
	-timeout 60m . -service-pairs "$SERVICEPAIRS")
commands=("$COUNT rounds of: go test ${serial[*]}; go test ${hot[*]}; go test ${many[*]}"
	"go test ${sweep[*]}" "go test ${svc[*]}" "go test ${ratio[*]}")

: >"$raw"
for ((round = 1; round <= COUNT; round++)); do
	step "benchmarks, round $round of $COUNT: go test ${serial[*]}"
	$GO test "${serial[@]}" >>"$raw" 2>&1 || status=1
	step "benchmarks, round $round of $COUNT: go test ${hot[*]}"
	$GO test "${hot[@]}" >>"$raw" 2>&1 || status=1
	step "benchmarks, round $round of $COUNT: go test ${many[*]}"
	$GO test "${many[@]}" >>"$raw" 2>&1 || status=1
done
step "benchmarks: ${commands[3]}"
$GO test "${ratio[@]}" >"$dir/hotkey-raw.txt" 2>&1 || status=1
if grep -q -- '--- FAIL' "$raw" "$dir/hotkey-raw.txt"; then
	status=1
fi

step "auto-sweep latency: ${commands[1]}"
$GO test "${sweep[@]}" >"$dir/sweep-raw.txt" 2>&1 || status=1

step "cross-check: go test -run '^TestCrossCheck\$' -v -count 1 ."
cross_status=0
$GO test -run '^TestCrossCheck$' -v -count 1 . >"$dir/cross.txt" 2>&1 || cross_status=1
[[ $cross_status == 0 ]] || status=1

# cmd/memory, cmd/flood and cmd/chart write their files only when they
# succeed: a file of an earlier run left in $dir would show its numbers in
# this run's summary, as if they were this run's.
step "memory: go run ./cmd/memory -keys $MEMKEYS ${MEMFLAGS[*]} -bench $dir/memory-raw.txt"
rm -f "$dir/memory-raw.txt"
memory_status=0
$GO run ./cmd/memory -keys "$MEMKEYS" "${MEMFLAGS[@]}" -bench "$dir/memory-raw.txt" >"$dir/memory.txt" 2>&1 || memory_status=1
[[ $memory_status == 0 ]] || status=1

step "service at scale: ${commands[2]}"
$GO test "${svc[@]}" >"$dir/service-raw.txt" 2>&1 || status=1

step "flood: go run ./cmd/flood -pairs $FLOODPAIRS -bench $dir/flood-raw.txt"
rm -f "$dir/flood-raw.txt"
flood_status=0
$GO run ./cmd/flood -pairs "$FLOODPAIRS" -bench "$dir/flood-raw.txt" >"$dir/flood.txt" 2>&1 || flood_status=1
[[ $flood_status == 0 ]] || status=1

if [[ $REDIS != 0 ]]; then
	redis_part
fi

step "chart, tables and summary"
rm -f "$dir/scaling.svg"
$GO run ./cmd/chart -o "$dir/scaling.svg" "$raw" || status=1

# impl=coarse is kept out of the head-to-head tables: its clock can stop, so
# it admits less than its policy; it has its own table with allowed/op.
hotlimit='mutex OR tokenbucket OR fixedwindow OR slidinglog OR gcra OR slidingcounter OR service'
peers='mutex OR xtime OR golimiter OR throttled OR ulule'
units='.unit:(ns/op OR B/op OR allocs/op)'
machine="$($GO version); $(nproc) CPUs; $(grep -m1 '^cpu:' "$raw" | sed 's/^cpu: *//;s/ *$//')"
loadline="load average (1, 5, 15 min) at the start $load_start, at the end $(load): other work on the machine widens the ranges"
wall() { echo "$(($(date +%s) - start))s"; }
# table CMD...: runs CMD, which prints one of latest.txt's tables (its error,
# such as benchstat's module not downloaded, goes there too); when it fails,
# so does the run, and the summary's FAILED section names it.
tables_failed=
table() {
	"$@" && return
	status=1
	local what="${*:1:3}"
	[[ "$tables_failed;" == *"; $what;"* ]] || tables_failed+="; $what"
}
{
	echo "hotlimit bench — $(date -u +%Y-%m-%dT%H:%MZ)"
	echo "$machine"
	echo "$loadline"
	printf '%s\n' "${commands[@]}"
	echo
	echo "### hotlimit against the mutex baseline (ns/op, B/op, allocs/op; vs base = impl=mutex)"
	table $GO tool benchstat -col '/impl@(mutex tokenbucket fixedwindow slidinglog gcra slidingcounter service)' \
		-filter "$units AND /impl:($hotlimit)" "$raw"
	echo
	echo "### peers against the mutex baseline"
	table $GO tool benchstat -col '/impl@(mutex xtime golimiter throttled ulule)' \
		-filter "$units AND /impl:($peers)" "$raw"
	echo
	echo "### impl=coarse (tokenbucket on a 1 ms CoarseClock) against the mutex baseline, with allowed/op:"
	echo "### the fraction of calls it admitted (hit=allow: the policy admits 1; hit=mixed: compare tokenbucket's below)"
	table $GO tool benchstat -col '/impl@(mutex coarse)' \
		-filter ".unit:(ns/op OR allowed/op) AND /impl:(mutex OR coarse)" "$raw"
	echo
	echo "### the parts of a decision (serial)"
	table $GO tool benchstat -filter '.name:Parts AND .unit:ns/op' "$raw"
	echo
	echo "### medians of ns/op and ratio to impl=mutex"
	table $GO run ./cmd/chart -table "$raw"
	echo
	echo "### allowed/op: hit=mixed (Zipf), and any run that allowed or denied what its policy should not"
	grep -E '^Benchmark.*allowed/op' "$raw" |
		awk '{ v = ""; w = ""
		       for (i = 3; i < NF; i++) { if ($(i+1) == "allowed/op") v = $i; if ($(i+1) == "wrong-calls") w = $i }
		       name = $1; sub(/^Benchmark/, "", name); cpu = 1
		       if (match(name, /-[0-9]+$/)) { cpu = substr(name, RSTART + 1); name = substr(name, 1, RSTART - 1) }
		       if (w != "" && w != 0) v = v ",wrong:" w
		       if (name ~ /hit=mixed/ || (w != "" && w != 0) || (name ~ /hit=allow/ && v != 1) || (name ~ /hit=deny/ && v != 0))
		           print name " -cpu " cpu ":", v }' |
		awk '{ k = $1 " " $2 " " $3; a[k] = a[k] " " $4 } END { for (k in a) print k a[k] }' | sort -k1,1 -k3,3n
	grep -E 'calls (denied|allowed)$' "$raw" | sed 's/^ *//' | sort | uniq -c | sort -rn | head -20
	echo
	echo "### one hot key, each algorithm and the mutex port in alternating blocks (BenchmarkHotKeyRatio):"
	echo "### every run: lockfree/mutex, the median of its per-block ratios; the medians of each one's ns per call"
	grep -E '^(BenchmarkHotKeyRatio|--- FAIL|FAIL|panic:)' "$dir/hotkey-raw.txt"
	echo
	echo "### auto-sweep: latency of one Allow while inserting new keys"
	grep -E '^(Benchmark|--- FAIL|FAIL)' "$dir/sweep-raw.txt"
	echo
	echo "### cross-check: N goroutines hammer new keys of limit L with a frozen clock (or 1 h window)"
	grep -E 'summary|FAIL|^(ok|PASS)' "$dir/cross.txt" | sed 's/^ *//'
	echo
	echo "### memory"
	cat "$dir/memory.txt"
	echo
	echo "### the service at scale: service against the bare token bucket under the service's keys, in alternating blocks"
	grep -E '^(--- FAIL|FAIL|panic:)' "$dir/service-raw.txt"
	table $GO tool benchstat -filter '.name:Service AND .unit:(service/bare OR service-ns/call OR bare-ns/call OR B/pair-service OR B/pair-bare OR allocs/op)' \
		"$dir/service-raw.txt"
	echo
	echo "### flood: distinct idle pairs through a service with its default options (cmd/flood)"
	cat "$dir/flood.txt"
	echo
	echo "### Redis: redislimit against redis_rate and a trivial script's ceiling (redis.txt)"
	echo "$redis_out"
	echo
	echo "wall time: $(wall); exit status $status"
} >"$out" 2>&1

{
	echo "hotlimit bench summary — $(date -u +%Y-%m-%dT%H:%MZ); $machine"
	echo "-benchtime $BENCHTIME, $COUNT runs (the paired ones in rounds); hot key -cpu $CPU; 100k keys and new keys -cpu $MANYCPU (commands in latest.txt)"
	echo "$loadline"
	if [[ "${SMOKE:-}" == 1 ]]; then
		echo "SMOKE=1: a few calls per benchmark; the numbers below mean nothing"
	fi
	echo
	$GO run ./cmd/summary "$raw" "$dir/hotkey-raw.txt" "$dir/sweep-raw.txt" "$dir/memory-raw.txt" "$dir/service-raw.txt" "$dir/flood-raw.txt" || status=1
	if [[ $redis_out == *skipped* ]]; then
		echo "$redis_out"
	elif [[ -n $redis_out ]]; then
		echo "Redis (redislimit against redis_rate and a trivial script's ceiling): see $redis_txt"
		grep -E '^ *(PASS|MISS) ' "$redis_txt"
	fi
	# A cross-check that did not run to its end (it did not build, it timed
	# out) has no "--- FAIL" line to count.
	if [[ $cross_status == 0 ]]; then
		echo "cross-check (frozen clock, N goroutines on new keys): 0 failures; see latest.txt"
	elif grep -q -- '--- FAIL' "$dir/cross.txt"; then
		# The implementations that failed (indented: subtests), not
		# TestCrossCheck's own line, which follows any of theirs.
		crossfail=$(grep -cE -- '^ +--- FAIL' "$dir/cross.txt")
		((crossfail > 0)) || crossfail=1
		echo "cross-check (frozen clock, N goroutines on new keys): FAILED, failed tests: $crossfail; see $dir/cross.txt"
	else
		echo "cross-check (frozen clock, N goroutines on new keys): FAILED, it did not run to its end; see $dir/cross.txt"
	fi
	if [[ $status != 0 ]]; then
		echo
		echo "FAILED: see $dir/raw.txt, $dir/hotkey-raw.txt, $dir/sweep-raw.txt, $dir/cross.txt, $dir/memory.txt, $dir/service-raw.txt, $dir/flood.txt${redis_ran:+, $redis_raw}"
		# A failed test or benchmark, a panic, code that did not build or
		# packages that did not load ("# package", then the errors), and the
		# go command's own errors ("go: ...", a download aside).
		tested=("$raw" "$dir/hotkey-raw.txt" "$dir/sweep-raw.txt" "$dir/cross.txt" "$dir/service-raw.txt")
		[[ -n $redis_ran ]] && tested+=("$redis_raw")
		{
			grep -hE -A2 -- '--- FAIL|panic:|^# ' "${tested[@]}"
			grep -hE '^go: ' "${tested[@]}" | grep -v '^go: downloading'
		} | head -20
		# cmd/memory's and cmd/flood's output, only when they failed: a table
		# that went well starts with "memory:" too.
		if [[ $memory_status != 0 ]]; then
			grep -hE '^(Error|memory:|exit status|go: |panic:)|\.go:[0-9]+:[0-9]+: ' "$dir/memory.txt" | grep -v '^go: downloading' | head -5
		fi
		if [[ $flood_status != 0 ]]; then
			grep -hE '^(flood:|exit status|go: |panic:)|\.go:[0-9]+:[0-9]+: ' "$dir/flood.txt" | grep -v '^go: downloading' | head -5
		fi
		if [[ -n $tables_failed ]]; then
			echo "tables of $out that did not print (the error is there): ${tables_failed#; }"
		fi
	fi
	echo
	chart="$dir/scaling.svg"
	[[ -f $chart ]] || chart="none, cmd/chart failed"
	echo "full tables: $dir/latest.txt; chart: $chart; wall time $(wall)"
} >"$dir/summary.txt" 2>&1

cat "$dir/summary.txt"
exit $status
