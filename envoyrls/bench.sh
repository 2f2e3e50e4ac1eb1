#!/usr/bin/env bash
# make envoybench: hotlimitd's ShouldRateLimit per second over loopback gRPC
# (BenchmarkShouldRateLimit in bench_test.go), in ROUNDS rounds of every impl
# once, then a summary: each impl's req/s range across rounds, and the ratios
# that the targets are about, computed within each round (the same moment of
# a loaded machine) and given as their range:
#
#   memory / ok         hotlimitd in memory against a handler that answers OK
#                       without deciding: the target is ≥ 1/1.3 (0.77)
#   redis / reference   hotlimitd on Redis against the reference server
#                       (envoyproxy/ratelimit) on the same redis-server: ≥ 2
#
# The reference server is measured when its binary is found:
#   HOTLIMITD_BENCH_REFERENCE  the path of its binary (src/service_cmd), or
#   ENVOY_RATELIMIT_SRC        a clone of github.com/envoyproxy/ratelimit,
#                              built here with go build
# else its rows are skipped and the summary says so.
#
# Knobs (environment): ROUNDS (default 3), BENCHTIME (-benchtime, default
# 1s), OUT (directory of envoy-raw.txt and envoy-summary.txt, default out/).
set -uo pipefail
cd "$(dirname "$0")"
ROUNDS=${ROUNDS:-3}
BENCHTIME=${BENCHTIME:-1s}
OUT=${OUT:-out}
GO=${GO:-go}
mkdir -p "$OUT"
raw=$OUT/envoy-raw.txt
summary=$OUT/envoy-summary.txt
status=0

ref_note=
if [[ -z "${HOTLIMITD_BENCH_REFERENCE:-}" && -n "${ENVOY_RATELIMIT_SRC:-}" ]]; then
	bin=$(mktemp -d)/ratelimit
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
args=(-test.run '^$' -test.bench '^BenchmarkShouldRateLimit$' -test.benchtime "$BENCHTIME" -test.count 1 -test.timeout 60m)
testbin=$(mktemp -d)/envoyrls.test
$GO test -c -o "$testbin" . || exit 1
: >"$raw"
for ((i = 1; i <= ROUNDS; i++)); do
	echo "== round $i of $ROUNDS: envoyrls.test ${args[*]}" >&2
	echo "round $i" >>"$raw"
	"$testbin" "${args[@]}" >>"$raw" 2>&1 || status=1
done
rm -f "$testbin"
grep -q -- '--- FAIL' "$raw" && status=1

{
	echo "hotlimitd ShouldRateLimit over loopback gRPC — $(date -u +%Y-%m-%dT%H:%MZ); $($GO version | cut -d' ' -f3); $(nproc) CPUs shared by clients, servers and Redis"
	echo "$(redis-server --version 2>/dev/null | cut -d' ' -f1-3); $ROUNDS rounds of: go test -run '^\$' -bench '^BenchmarkShouldRateLimit\$' -benchtime $BENCHTIME -count 1 ."
	[[ -n $ref_note ]] && echo "$ref_note"
	echo
	awk -v rounds="$ROUNDS" '
	/^round / { round++ }
	/^BenchmarkShouldRateLimit\// {
		name = $1; sub(/^BenchmarkShouldRateLimit\//, "", name); sub(/-[0-9]+$/, "", name)
		split(name, p, "/"); impl = p[1]; sub(/^impl=/, "", impl)
		load = p[2] "/" p[3]
		v = ""
		for (i = 3; i < NF; i++) if ($(i+1) == "req/s") v = $i
		if (v == "") next
		r[round, impl, load] = v
		if (!(impl in seenImpl)) { seenImpl[impl] = 1; impls[++ni] = impl }
		if (!(load in seenLoad)) { seenLoad[load] = 1; loads[++nl] = load }
	}
	function k(x) { return x >= 1000 ? sprintf("%.1fk", x / 1000) : sprintf("%d", x) }
	function range(impl, load,    i, lo, hi, n) {
		n = 0
		for (i = 1; i <= round; i++) if ((i, impl, load) in r) {
			if (n == 0 || r[i, impl, load] < lo) lo = r[i, impl, load]
			if (n == 0 || r[i, impl, load] > hi) hi = r[i, impl, load]
			n++
		}
		return n == 0 ? "-" : k(lo) "-" k(hi)
	}
	# ratio prints the range of a/b within rounds, and the verdict against
	# want: PASS when every round meets it, MISS when none does.
	function ratio(a, b, load, want,    i, lo, hi, n, x, met) {
		n = 0; met = 0
		for (i = 1; i <= round; i++) if (((i, a, load) in r) && ((i, b, load) in r)) {
			x = r[i, a, load] / r[i, b, load]
			if (n == 0 || x < lo) lo = x
			if (n == 0 || x > hi) hi = x
			if (x >= want) met++
			n++
		}
		if (n == 0) return ""
		return sprintf("%.2f-%.2f (%s: %d of %d rounds ≥ %.2f)", lo, hi, met == n ? "PASS" : met == 0 ? "MISS" : "SOME", met, n, want)
	}
	END {
		printf "req/s, range over %d rounds\n", round
		printf "%-10s", "impl"
		for (j = 1; j <= nl; j++) printf "  %-26s", loads[j]
		printf "\n"
		for (i = 1; i <= ni; i++) {
			printf "%-10s", impls[i]
			for (j = 1; j <= nl; j++) printf "  %-26s", range(impls[i], loads[j])
			printf "\n"
		}
		printf "\nratios within a round, range over rounds\n"
		for (j = 1; j <= nl; j++) {
			s = ratio("memory", "ok", loads[j], 1 / 1.3)
			if (s != "") printf "  memory / ok        %-26s %s\n", loads[j], s
		}
		for (j = 1; j <= nl; j++) {
			s = ratio("redis", "reference", loads[j], 2)
			if (s != "") printf "  redis / reference  %-26s %s\n", loads[j], s
		}
	}' "$raw"
	if [[ $status != 0 ]]; then
		echo
		echo "FAILED: see $raw"
		grep -E -- '--- FAIL|panic:|_test\.go:[0-9]+:' "$raw" | head -10
	fi
} >"$summary"
cat "$summary"
exit $status
