package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// input: two runs of one hot key at -cpu 2 (allow), two serial runs, the
// parts, an auto-sweep run and memory lines. xtime is the fastest peer at
// -cpu 2 but denied a call at hit=allow in one run, so golimiter is the
// peer compared with.
const input = `goos: linux
goarch: amd64
pkg: github.com/hotlimit/hotlimit/bench
cpu: Test CPU
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex          1000   50.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex          1000   40.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=golimiter      1000  100.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=golimiter      1000  100.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket    1000   45.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket    1000   40.0 ns/op   1.000 allowed/op   0 B/op   0 allocs/op
BenchmarkParts/part=mapload     1000   10.0 ns/op
BenchmarkParts/part=mapload     1000   10.0 ns/op
BenchmarkParts/part=monotonic   1000   25.0 ns/op
BenchmarkParts/part=monotonic   1000   25.0 ns/op
BenchmarkParts/part=cas         1000    5.0 ns/op
BenchmarkParts/part=cas         1000    5.0 ns/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=mutex-2        1000  100.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=mutex-2        1000   80.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=xtime-2        1000   20.0 ns/op   0.500 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=xtime-2        1000   20.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=golimiter-2    1000  200.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=golimiter-2    1000  100.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=tokenbucket-2  1000   50.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=tokenbucket-2  1000   60.0 ns/op   1.000 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=coarse-2       1000   30.0 ns/op   0.400 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=coarse-2       1000   40.0 ns/op   0.600 allowed/op
BenchmarkAutoSweep/impl=tokenbucket   2000000   400 ns/op   310 p50-ns   23000 p99.9-ns   386000000 max-ns   23 over-1ms   2000000 keys   70000 held
BenchmarkAutoSweep/impl=tokenbucket   2000000   400 ns/op   300 p50-ns   21000 p99.9-ns   500000 max-ns   0 over-1ms   2000000 keys   70000 held
BenchmarkMemory/impl=tokenbucket	1	66.0 B/key	0.5 B/key-evicted	1000000 keys
BenchmarkMemory/impl=throttled	1	64.0 B/key	1000000 keys
BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow-2   100   300 ns/op   60.0 lockfree-ns/call   0.90 lockfree/mutex   66.0 mutex-ns/call
BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow-2   100   300 ns/op   60.0 lockfree-ns/call   1.10 lockfree/mutex   55.0 mutex-ns/call
BenchmarkHotKeyRatio/impl=tokenbucket/hit=allow-2   100   300 ns/op   60.0 lockfree-ns/call   0.95 lockfree/mutex   63.0 mutex-ns/call
BenchmarkHotKeyRatio/impl=slidinglog/hit=allow-2    100   300 ns/op   90.0 lockfree-ns/call   1.50 lockfree/mutex   60.0 mutex-ns/call
BenchmarkHotKeyRatio/impl=tokenbucket/hit=deny-2    100   300 ns/op   20.0 lockfree-ns/call   0.30 lockfree/mutex   66.0 mutex-ns/call
PASS
`

func summary(t *testing.T) string {
	t.Helper()
	samples, err := parse(strings.NewReader(input), "input")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, write(&out, samples))
	t.Log("\n" + out.String())
	return out.String()
}

func TestParse(t *testing.T) {
	samples, err := parse(strings.NewReader(input), "input")
	require.NoError(t, err)
	require.Len(t, samples, 31)
	s := samples[12]
	assert.Equal(t, "Allow", s.bench)
	assert.Equal(t, "Allow/mode=parallel/keys=1/hit=allow", s.scenario)
	assert.Equal(t, "mutex", s.impl)
	assert.Equal(t, 2, s.cpu)
	assert.Equal(t, 100.0, s.values["ns/op"], "ns/op as written, not benchfmt's sec/op")
	assert.Equal(t, 1.0, s.values["allowed/op"])
	assert.Equal(t, 1, samples[0].cpu, "no -N suffix is -cpu 1")
	assert.Equal(t, "Parts/part=cas", samples[10].scenario)
	assert.Equal(t, 64.0, samples[25].values["B/key"])
}

// TestRatios checks the cells: run i against run i, median then min-max.
func TestRatios(t *testing.T) {
	out := summary(t)
	// tokenbucket ÷ mutex at -cpu 2: 50/100 and 60/80.
	assert.Regexp(t, `(?m)^hot key, allow +2 +0\.62 \[0\.50-0\.75\] *$`, lineOf(t, out, "hot key, allow  ", 0))
	// Serial: 45/50 and 40/40.
	assert.Regexp(t, `^one key, serial, allow +1 +0\.95 \[0\.90-1\.00\] *$`, lineOf(t, out, "one key, serial, allow", 0))
	// ÷ fastest peer: xtime is left out (it denied at hit=allow), golimiter
	// is compared: 50/200 and 60/100.
	assert.Regexp(t, `^hot key, allow +2 +golimiter +0\.42 \[0\.25-0\.60\] *$`, lineOf(t, out, "hot key, allow  ", 1))
	assert.Contains(t, out, "hot key, allow -cpu 2: xtime left out")
	assert.Regexp(t, `^one key, serial, allow +1 +golimiter +0\.43 \[0\.40-0\.45\] *$`, lineOf(t, out, "one key, serial, allow", 1))
	assert.NotContains(t, lineOf(t, out, "÷ mutex port", 0), "coarse", "coarse is not in the head-to-head tables")
}

// TestGlance checks the first table: tokenbucket against the fastest peer
// that kept to the policy and against the mutex port, with the verdict of
// every run, and on the hot key the blocks; it comes before the full tables.
func TestGlance(t *testing.T) {
	out := summary(t)
	require.True(t, strings.HasPrefix(out, "At a glance: tokenbucket"), "the summary starts with it")
	// Serial: 45/100 and 40/100 against golimiter; 45/50 and 40/40 against
	// the mutex port, whose max 1.00 is not below 1.
	assert.Regexp(t, `^  one key, serial, allow +1 +0\.43 \[0\.40-0\.45\] golimiter, faster +0\.95 \[0\.90-1\.00\], either way *$`,
		lineOf(t, out, "  one key, serial, allow", 0))
	// Hot key at -cpu 2: xtime is left out (it denied), golimiter 50/200 and
	// 60/100; mutex 50/100 and 60/80; blocks 0.90, 1.10, 0.95.
	assert.Regexp(t, `^  hot key, allow +2 +0\.42 \[0\.25-0\.60\] golimiter, faster +0\.62 \[0\.50-0\.75\], faster; blocks 0\.95 \[0\.90-1\.10\], either way *$`,
		lineOf(t, out, "  hot key, allow", 0))
	assert.Less(t, strings.Index(out, "  hot key, allow"), strings.Index(out, "\n÷ mutex port "), "before the full tables")
	assert.Equal(t, "slower", verdict(stat{med: 1.2, lo: 1.01, hi: 1.3}))
}

// TestCoarse checks that impl=coarse shows its admission next to its speed.
func TestCoarse(t *testing.T) {
	out := summary(t)
	// 30/100, 40/80; allowed/op 0.4 and 0.6.
	assert.Regexp(t, `^hot key, allow +2 +0\.40 \[0\.30-0\.50\] +0\.50 \[0\.40-0\.60\] *$`, lineOf(t, out, "hot key, allow  ", 2))
}

func TestFloorSweepMemory(t *testing.T) {
	out := summary(t)
	// Parts sum to 40 ns; tokenbucket 45/40 and 40/40.
	assert.Contains(t, out, "= 40.0 ns, same run): tokenbucket 1.06 [1.00-1.12]\n")
	assert.Contains(t, out, "impl=tokenbucket, 2 runs of 2000000 keys: p50 305 ns [300 ns-310 ns], p99.9 22 µs [21 µs-23 µs], "+
		"max 193 ms [500 µs-386 ms], calls over 1 ms 11.5 [0-23], keys held at the end 70000 [70000-70000]\n")
	assert.Contains(t, out, "hotlimit: tokenbucket 66 (0)\n")
	assert.Contains(t, out, "others:   throttled 64 (never evicts)\n")
}

// TestHotKeyRatio checks the blocks' table: per algorithm and row, the
// median of the runs' lockfree/mutex and their range; – where an algorithm
// has no run.
func TestHotKeyRatio(t *testing.T) {
	out := summary(t)
	assert.Regexp(t, `^÷ mutex port, blocks +cpu +tokenbucket +slidinglog *$`, lineOf(t, out, "÷ mutex port, blocks", 0))
	assert.Regexp(t, `^hot key, allow +2 +0\.95 \[0\.90-1\.10\] +1\.50 \[1\.50-1\.50\] *$`, lineOf(t, out, "hot key, allow ", 3))
	assert.Regexp(t, `^hot key, deny +2 +0\.30 \[0\.30-0\.30\] +– *$`, lineOf(t, out, "hot key, deny ", 0))
}

func TestEmptyInput(t *testing.T) {
	samples, err := parse(strings.NewReader("goos: linux\nPASS\n"), "empty")
	require.NoError(t, err)
	var out bytes.Buffer
	assert.ErrorContains(t, write(&out, samples), "no results")
}

// lineOf returns the n-th line (from 0) of out that starts with prefix.
func lineOf(t *testing.T, out, prefix string, n int) string {
	t.Helper()
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			if n == 0 {
				return l
			}
			n--
		}
	}
	t.Fatalf("no line %d starting with %q in:\n%s", n, prefix, out)
	return ""
}

// TestServiceAndFlood checks the service-at-scale table (the median of the
// runs' ratios and their range, B/pair medians and their ratio) and the
// flood line.
func TestServiceAndFlood(t *testing.T) {
	const in = `BenchmarkService/pairs=100000-2   1000   300.0 ns/op   96.0 B/pair-bare   97.0 B/pair-service   1.000 allowed/op   140 bare-ns/call   160 service-ns/call   1.10 service/bare
BenchmarkService/pairs=100000-2   1000   300.0 ns/op   96.0 B/pair-bare   97.0 B/pair-service   1.000 allowed/op   150 bare-ns/call   150 service-ns/call   1.00 service/bare
BenchmarkService/pairs=100000-2   1000   300.0 ns/op   96.0 B/pair-bare   97.0 B/pair-service   1.000 allowed/op   130 bare-ns/call   170 service-ns/call   1.30 service/bare
BenchmarkFlood/impl=service 1 900.0 ns/pair 10000000 pairs 60000 held 5242880 heap-B 10485760 peak-B 87.4 B/held-pair
`
	samples, err := parse(strings.NewReader(in), "in")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, write(&out, samples))
	t.Log("\n" + out.String())
	// The runs' service/bare 1.10, 1.00, 1.30; service-ns/call median 160.
	assert.Regexp(t, `^100000 +2 +1\.10 \[1\.00-1\.30\] +160 +97 +96 +1\.01 *$`, lineOf(t, out.String(), "100000 ", 0))
	assert.Contains(t, out.String(), "flood (cmd/flood): 10000000 distinct pairs through a default service, one request each: heap +5.0 MB at the end\n")
	assert.Contains(t, out.String(), "(peak +10.0 MB) for 60000 pairs held, 87 B per pair held; 900 ns per pair\n")
}

// TestFloodBytesPerPairHeldAsFlood: the bytes per pair held are the heap
// over the pairs held, rounded once, as cmd/flood prints them, not the
// line's B/held-pair, already rounded to a tenth, rounded again: 9469720 B
// for 65532 pairs is 144.505 B, which cmd/flood prints as 145 and its line
// records as 144.5.
func TestFloodBytesPerPairHeldAsFlood(t *testing.T) {
	const in = "BenchmarkFlood/impl=service 1 407.6 ns/pair 10000000 pairs 65532 held 9469720 heap-B 9469736 peak-B 144.5 B/held-pair\n"
	samples, err := parse(strings.NewReader(in), "in")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, write(&out, samples))
	assert.Contains(t, out.String(), "(peak +9.0 MB) for 65532 pairs held, 145 B per pair held; 408 ns per pair\n")
}

// TestFloodOfNoPairHeld: a flood that ends holding no pair (every one swept)
// prints the heap over one pair, as cmd/flood divides by at least one: the
// line's own figure, not a division by zero.
func TestFloodOfNoPairHeld(t *testing.T) {
	const in = "BenchmarkFlood/impl=service 1 407.6 ns/pair 10000000 pairs 0 held 9469720 heap-B 9469736 peak-B 9469720.0 B/held-pair\n"
	samples, err := parse(strings.NewReader(in), "in")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, write(&out, samples))
	assert.Contains(t, out.String(), "for 0 pairs held, 9469720 B per pair held; 408 ns per pair\n")
}

// TestGlanceOneRun: with one run (COUNT=1) there is no agreement of runs to
// speak of, so the verdict says "one run" rather than faster or slower.
func TestGlanceOneRun(t *testing.T) {
	const in = `BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex        1000  50.0 ns/op  1.000 allowed/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=golimiter    1000  80.0 ns/op  1.000 allowed/op
BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket  1000  40.0 ns/op  1.000 allowed/op
`
	samples, err := parse(strings.NewReader(in), "in")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, write(&out, samples))
	t.Log("\n" + out.String())
	// 40/80 and 40/50, one run each.
	assert.Regexp(t, `^  one key, serial, allow +1 +0\.50 \[0\.50-0\.50\] golimiter, one run +0\.80 \[0\.80-0\.80\], one run *$`,
		lineOf(t, out.String(), "  one key, serial, allow", 0))
	assert.Equal(t, "faster", verdict(stat{med: 0.8, lo: 0.7, hi: 0.9, n: 2}))
}

// TestParseNames: the -N suffix is GOMAXPROCS only when it ends the name, a
// dash inside an impl's name is part of it, and impl= may sit before other
// levels (HotKeyRatio).
func TestParseNames(t *testing.T) {
	const in = `BenchmarkAutoSweep/impl=tokenbucket-maxkeys   10   400 ns/op   300 p50-ns
BenchmarkAutoSweep/impl=tokenbucket-maxkeys-16   10   400 ns/op   300 p50-ns
BenchmarkHotKeyRatio/impl=gcra/hit=deny-8   100   300 ns/op   0.30 lockfree/mutex
BenchmarkService/pairs=1000-4   1000   300 ns/op   1.10 service/bare
`
	samples, err := parse(strings.NewReader(in), "in")
	require.NoError(t, err)
	require.Len(t, samples, 4)
	assert.Equal(t, []any{"tokenbucket-maxkeys", 1, "AutoSweep"}, []any{samples[0].impl, samples[0].cpu, samples[0].scenario})
	assert.Equal(t, []any{"tokenbucket-maxkeys", 16, "AutoSweep"}, []any{samples[1].impl, samples[1].cpu, samples[1].scenario})
	assert.Equal(t, []any{"gcra", 8, "HotKeyRatio/hit=deny"}, []any{samples[2].impl, samples[2].cpu, samples[2].scenario})
	assert.Equal(t, []any{"", 4, "Service/pairs=1000"}, []any{samples[3].impl, samples[3].cpu, samples[3].scenario})
}

// TestRatiosArithmetic: the median of an odd and of an even number of
// per-run ratios, run i against run i, the extra runs of the longer side
// left out, and the verdicts.
func TestRatiosArithmetic(t *testing.T) {
	run := func(ns ...float64) []sample {
		var out []sample
		for i, v := range ns {
			out = append(out, sample{values: map[string]float64{"ns/op": v}, run: i})
		}
		return out
	}
	// 10/20, 30/20, 20/40: sorted 0.5, 0.5, 1.5.
	st, ok := ratios(run(10, 30, 20), run(20, 20, 40), "ns/op")
	require.True(t, ok)
	assert.Equal(t, stat{med: 0.5, lo: 0.5, hi: 1.5, n: 3}, st)
	assert.Equal(t, "either way", verdict(st))
	// 10/40, 30/40 (the third run of a has no partner): median 0.5.
	st, ok = ratios(run(10, 30, 99), run(40, 40), "ns/op")
	require.True(t, ok)
	assert.Equal(t, stat{med: 0.5, lo: 0.25, hi: 0.75, n: 2}, st)
	assert.Equal(t, "faster", verdict(st))
	assert.Equal(t, "slower", verdict(stat{med: 2, lo: 1.5, hi: 3, n: 2}))
	// No runs on one side: no cell.
	_, ok = ratios(run(10), nil, "ns/op")
	assert.False(t, ok)
	assert.Equal(t, "0.50 [0.25-0.75]", st.String())
	assert.Equal(t, "12.3 [10.0-15.0]", stat{med: 12.34, lo: 10, hi: 15}.String())
}

// TestWrongCountsEveryWrongCall: a run that denied one call in 100,000 at
// hit=allow prints allowed/op 1.000, and is still judged wrong by its
// wrong-calls; a run without wrong-calls (an older file) is judged by
// allowed/op.
func TestWrongCountsEveryWrongCall(t *testing.T) {
	const runs = `BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=throttled-2  100000  500.0 ns/op  1.000 allowed/op  1.000 wrong-calls
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=xtime-2      100000  200.0 ns/op  1.000 allowed/op  0 wrong-calls
BenchmarkAllow/mode=parallel/keys=1/hit=deny/impl=xtime-2       100000  200.0 ns/op  0.0000100 allowed/op  1.000 wrong-calls
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=ulule-2      100000  900.0 ns/op  0.9990 allowed/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=golimiter-2  100000  300.0 ns/op  1.000 allowed/op
`
	samples, err := parse(strings.NewReader(runs), "runs")
	require.NoError(t, err)
	require.Len(t, samples, 5)
	for i, want := range []bool{true, false, true, true, false} {
		s := samples[i]
		assert.Equal(t, want, wrong([]sample{s}, hit(s.scenario)), "line %d", i+1)
	}
}

// TestRatiosPairRunsOfTheSameRound: run.sh appends one go test output per
// round, each under its own header. When a run fails in a round (no result
// line, only --- FAIL), a ratio must still pair the runs of the same round,
// not the i-th surviving run of one implementation with the i-th of the
// other, which come from rounds minutes apart.
func TestRatiosPairRunsOfTheSameRound(t *testing.T) {
	const header = "goos: linux\ngoarch: amd64\npkg: github.com/hotlimit/hotlimit/bench\ncpu: Test CPU\n"
	const rounds = header +
		"BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex        1000  100.0 ns/op  1.000 allowed/op\n" +
		"--- FAIL: BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket\n" +
		"FAIL\n" + header +
		"BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex        1000  200.0 ns/op  1.000 allowed/op\n" +
		"BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket  1000   50.0 ns/op  1.000 allowed/op\n" +
		"PASS\n" + header +
		"BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=mutex        1000   80.0 ns/op  1.000 allowed/op\n" +
		"BenchmarkAllow/mode=serial/keys=1/hit=allow/impl=tokenbucket  1000   40.0 ns/op  1.000 allowed/op\n" +
		"PASS\n"
	samples, err := parse(strings.NewReader(rounds), "rounds")
	require.NoError(t, err)
	d := collect(samples)
	r := row{"Allow/mode=serial/keys=1/hit=allow", 1}
	require.Len(t, d.runs[r]["mutex"], 3)
	require.Len(t, d.runs[r]["tokenbucket"], 2)
	st, ok := ratios(d.runs[r]["tokenbucket"], d.runs[r]["mutex"], "ns/op")
	require.True(t, ok)
	// Round 2: 50/200; round 3: 40/80. Not 50/100 and 40/200.
	assert.Equal(t, "0.38 [0.25-0.50]", st.String())
	assert.Equal(t, 2, st.n)
}

// TestCoarseCountsWrongCalls: a coarse run at 100k keys, hit=allow, that
// denied 3 of 105,000 calls prints allowed/op 1.000; its admission cell must
// not read as exact but say how many calls it denied (wrong-calls).
func TestCoarseCountsWrongCalls(t *testing.T) {
	const runs = `BenchmarkAllow/mode=parallel/keys=100000/dist=uniform/hit=allow/impl=mutex-2   105000  400.0 ns/op  1.000 allowed/op  0 wrong-calls
BenchmarkAllow/mode=parallel/keys=100000/dist=uniform/hit=allow/impl=coarse-2  105000  200.0 ns/op  1.000 allowed/op  3.000 wrong-calls
BenchmarkAllow/mode=parallel/keys=100000/dist=uniform/hit=allow/impl=mutex-2   105000  400.0 ns/op  1.000 allowed/op  0 wrong-calls
BenchmarkAllow/mode=parallel/keys=100000/dist=uniform/hit=allow/impl=coarse-2  105000  200.0 ns/op  1.000 allowed/op  0 wrong-calls
`
	samples, err := parse(strings.NewReader(runs), "runs")
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, write(&b, samples))
	line := lineOf(t, b.String(), "100k keys, uniform, allow  ", 2)
	assert.Regexp(t, `0\.50 \[0\.50-0\.50\] +1\.00 \[1\.00-1\.00\], 3 calls denied in 1 of 2 runs *$`, line)
}
