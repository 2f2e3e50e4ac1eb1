#!/usr/bin/env bash
# make envoybench: hotlimitd's ShouldRateLimit per second over loopback gRPC
# (BenchmarkShouldRateLimit in bench_test.go), in ROUNDS rounds of every impl
# once, then a summary: each impl's req/s and CPU time per request (clients,
# server and Redis) as ranges across rounds, and the ratios that the targets
# are about, computed within each round (the same moment of a loaded
# machine) and given as their range:
#
#   memory / ok           hotlimitd in memory against a handler that answers
#                         OK without deciding: the target is ≥ 1/1.3 (0.77)
#   hotlimitd / reference hotlimitd's command on Redis against the reference
#                         server (envoyproxy/ratelimit), each a process of its
#                         own on the same redis-server: ≥ 2
#   redis / reference     the same with hotlimitd's server in the benchmark's
#                         process
#   hotlimitd-memory / reference
#                         hotlimitd's command in memory, no Redis, against
#                         the same reference: the most any server on Redis
#                         could reach here, since gRPC, the clients and the
#                         process boundary cost it as much
#
# Besides the sum, each row of envoy-raw.txt gives each process's share of
# the CPU time per request: bench-us/req (the clients, and the server when
# in process), server-us/req and redis-us/req.
#
# req/s ratios move with the other work on the machine; the CPU ratios (the
# reference's CPU per request over hotlimitd's, so that higher is better in
# both) much less, and on a machine whose CPUs are all busy, req/s goes as
# the inverse of CPU per request.
#
# The reference server is measured when its binary is found:
#   HOTLIMITD_BENCH_REFERENCE  the path of its binary (src/service_cmd), or
#   ENVOY_RATELIMIT_SRC        a clone of github.com/envoyproxy/ratelimit,
#                              built here with go build
# else its rows are skipped and the summary says so.
#
# Knobs (environment): ROUNDS (default 3), BENCHTIME (-benchtime, default
# 1s), OUT (directory of envoy-raw.txt and envoy-summary.txt, default out/),
# IMPLS (the impls to measure, a regular expression matching whole names,
# such as 'hotlimitd|reference'; default all).
set -uo pipefail
cd "$(dirname "$0")"
ROUNDS=${ROUNDS:-3}
BENCHTIME=${BENCHTIME:-1s}
IMPLS=${IMPLS:-.*}
OUT=${OUT:-out}
GO=${GO:-go}
mkdir -p "$OUT"
raw=$OUT/envoy-raw.txt
summary=$OUT/envoy-summary.txt
status=0
# tmp holds the binaries built here (the reference server, hotlimitd, the
# test binary), removed however the script ends.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

ref_note=
if [[ -z "${HOTLIMITD_BENCH_REFERENCE:-}" && -n "${ENVOY_RATELIMIT_SRC:-}" ]]; then
	bin=$tmp/ratelimit
	if (cd "$ENVOY_RATELIMIT_SRC" && $GO build -o "$bin" ./src/service_cmd); then
		export HOTLIMITD_BENCH_REFERENCE=$bin
	else
		ref_note="the reference server did not build from ENVOY_RATELIMIT_SRC=$ENVOY_RATELIMIT_SRC"
	fi
fi
if [[ -z "${HOTLIMITD_BENCH_REFERENCE:-}" && -z $ref_note ]]; then
	ref_note="impl=reference skipped: set HOTLIMITD_BENCH_REFERENCE (its binary) or ENVOY_RATELIMIT_SRC (a clone of github.com/envoyproxy/ratelimit)"
fi

# -count would run each impl ROUNDS times in a row, so that a change in the
# machine's load between impls would bias their ratios: instead, ROUNDS runs
# of the test binary, each measuring every impl once.
# hotlimitd's command, measured as a process of its own as the reference is.
if $GO build -o "$tmp/hotlimitd" ./cmd/hotlimitd; then
	export HOTLIMITD_BENCH_HOTLIMITD=$tmp/hotlimitd
else
	status=1
fi

args=(-test.run '^$' -test.bench "^BenchmarkShouldRateLimit\$/impl=($IMPLS)\$/" -test.benchtime "$BENCHTIME" -test.count 1 -test.timeout 60m)
testbin=$tmp/envoyrls.test
if ! $GO test -c -o "$testbin" .; then
	# Nothing was measured: no file of an earlier run may stay in OUT as
	# this run's.
	rm -f "$raw" "$summary"
	echo "FAILED: the test binary did not build; nothing measured" >&2
	exit 1
fi
: >"$raw"
for ((i = 1; i <= ROUNDS; i++)); do
	echo "== round $i of $ROUNDS: envoyrls.test ${args[*]}" >&2
	echo "round $i" >>"$raw"
	"$testbin" "${args[@]}" >>"$raw" 2>&1 || status=1
done
rm -rf "$tmp"
grep -q -- '--- FAIL' "$raw" && status=1

{
	echo "hotlimitd ShouldRateLimit over loopback gRPC — $(date -u +%Y-%m-%dT%H:%MZ); $($GO version | cut -d' ' -f3); $(nproc) CPUs shared by clients, servers and Redis"
	echo "$(redis-server --version 2>/dev/null | cut -d' ' -f1-3); $ROUNDS rounds of: go test -run '^\$' -bench '^BenchmarkShouldRateLimit\$/impl=($IMPLS)\$/' -benchtime $BENCHTIME -count 1 ."
	[[ -n $ref_note ]] && echo "$ref_note"
	echo
	awk -v rounds="$ROUNDS" '
	/^round / { round++ }
	/^BenchmarkShouldRateLimit\// {
		name = $1; sub(/^BenchmarkShouldRateLimit\//, "", name); sub(/-[0-9]+$/, "", name)
		split(name, p, "/"); impl = p[1]; sub(/^impl=/, "", impl)
		load = p[2] "/" p[3]
		v = ""; c = ""
		for (i = 3; i < NF; i++) {
			if ($(i+1) == "req/s") v = $i
			if ($(i+1) == "cpu-us/req") c = $i
		}
		if (v == "") next
		r[round, impl, load] = v
		if (c != "") cpu[round, impl, load] = c
		if (!(impl in seenImpl)) { seenImpl[impl] = 1; impls[++ni] = impl }
		if (!(load in seenLoad)) { seenLoad[load] = 1; loads[++nl] = load }
	}
	function k(x) { return x >= 1000 ? sprintf("%.1fk", x / 1000) : sprintf("%d", x) }
	function range(a, impl, load, fmt,    i, lo, hi, n) {
		n = 0
		for (i = 1; i <= round; i++) if ((i, impl, load) in a) {
			if (n == 0 || a[i, impl, load] + 0 < lo) lo = a[i, impl, load] + 0
			if (n == 0 || a[i, impl, load] + 0 > hi) hi = a[i, impl, load] + 0
			n++
		}
		if (n == 0) return "-"
		return fmt ? sprintf("%d-%d", lo, hi) : k(lo) "-" k(hi)
	}
	# ratio prints the range of a/b within rounds, and the verdict against
	# want: PASS when every round meets it, MISS when none does.
	function ratio(m, a, b, load, want,    i, lo, hi, n, x, met) {
		n = 0; met = 0
		for (i = 1; i <= round; i++) if (((i, a, load) in m) && ((i, b, load) in m) && m[i, b, load] > 0) {
			x = m[i, a, load] / m[i, b, load]
			if (n == 0 || x < lo) lo = x
			if (n == 0 || x > hi) hi = x
			if (x >= want) met++
			n++
		}
		if (n == 0) return ""
		return sprintf("%.2f-%.2f (%s: %d of %d rounds ≥ %.2f)", lo, hi, met == n ? "PASS" : met == 0 ? "MISS" : "SOME", met, n, want)
	}
	function table(title, a, fmt,    i, j) {
		printf "%s, range over %d rounds\n", title, round
		printf "%-17s", "impl"
		for (j = 1; j <= nl; j++) printf "  %-26s", loads[j]
		printf "\n"
		for (i = 1; i <= ni; i++) {
			printf "%-17s", impls[i]
			for (j = 1; j <= nl; j++) printf "  %-26s", range(a, impls[i], loads[j], fmt)
			printf "\n"
		}
	}
	# ratios prints, for every load, a/b of req/s and b/a of CPU per
	# request, both ≥ want when a meets its target against b.
	function ratios(a, b, want,    j, s, label) {
		label = a " / " b
		for (j = 1; j <= nl; j++) {
			s = ratio(r, a, b, loads[j], want)
			if (s != "") printf "  %-29s %-26s req/s %s\n", label, loads[j], s
			s = ratio(cpu, b, a, loads[j], want)
			if (s != "") printf "  %-29s %-26s CPU   %s\n", label, loads[j], s
		}
	}
	END {
		table("req/s", r, 0)
		printf "\n"
		table("CPU µs per request (clients + server + Redis)", cpu, 1)
		printf "\nratios within a round (req/s: a/b; CPU per request: b/a), range over rounds\n"
		ratios("memory", "ok", 1 / 1.3)
		ratios("hotlimitd", "reference", 2)
		ratios("redis", "reference", 2)
		ratios("hotlimitd-memory", "reference", 2)
	}' "$raw"
	if [[ $status != 0 ]]; then
		echo
		echo "FAILED: see $raw"
		grep -E -- '--- FAIL|panic:|_test\.go:[0-9]+:' "$raw" | head -10
	fi
} >"$summary"
cat "$summary"
exit $status
