// Command summary reads `go test -bench` output of the bench module (parsed
// with golang.org/x/perf/benchfmt) and prints a short answer to "is hotlimit
// faster for my case": first, at a glance, tokenbucket (hotlimit's token
// bucket) against the fastest peer and the mutex port per scenario and
// -cpu, saying faster or slower when every run agrees; then for every
// scenario and -cpu value, each hotlimit
// algorithm's ns/op as a ratio to the mutex port (impl=mutex) and to the
// fastest peer, with the range of the ratio across the runs (-count); the
// coarse clock's speed next to its admission error; the hot key with each
// algorithm and the mutex port timed in alternating blocks
// (BenchmarkHotKeyRatio's lockfree/mutex); the latency of single
// calls with auto-sweep on (BenchmarkAutoSweep); the bytes per idle key
// (BenchmarkMemory lines from cmd/memory -bench); and the floor (a serial
// decision against the sum of its parts).
//
//	go run ./cmd/summary out/raw.txt out/memory-raw.txt
//
// Ratios pair run i of one implementation with run i of the other within a
// go test output (each begins with its goos: header): run.sh appends one
// output per round, each benchmark once, so a ratio pairs the runs of the
// same round, also when a run failed in another round (no result line); a
// cell is the median of those ratios and their minimum and maximum. Below 1
// hotlimit is faster.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/perf/benchfmt"
)

// sample is one benchmark result line.
type sample struct {
	bench    string // the benchmark function without "Benchmark": Allow, Insert, Parts, ...
	scenario string // the name without the impl=… part and the -N suffix
	impl     string
	cpu      int
	values   map[string]float64 // by the unit as written (ns/op, allowed/op, ...)
	// round is the index of the go test output the line came from in its
	// file (a new one at each goos: header), run its index among the runs of
	// the same name in that output (-count): ratios pair runs of equal
	// round and run.
	round, run int
}

// parse reads every benchmark result of r, each go test output in it (one
// per round of run.sh, from one goos: header to the next) as a round.
func parse(r io.Reader, fileName string) ([]sample, error) {
	in, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("summary: %s: %w", fileName, err)
	}
	var out []sample
	for round, output := range outputs(string(in)) {
		samples, err := parseOutput(strings.NewReader(output), fileName)
		if err != nil {
			return nil, err
		}
		runs := map[string]int{}
		for _, s := range samples {
			k := fmt.Sprintf("%s\x00%s\x00%d", s.scenario, s.impl, s.cpu)
			s.round, s.run = round, runs[k]
			runs[k]++
			out = append(out, s)
		}
	}
	return out, nil
}

// outputs splits text into the go test outputs it holds, each starting at a
// line "goos: …" (text before the first is an output of its own).
func outputs(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); {
		if strings.HasPrefix(text[i:], "goos:") && i > start {
			out = append(out, text[start:i])
			start = i
		}
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return append(out, text[start:])
}

// parseOutput reads every benchmark result of one go test output.
func parseOutput(r io.Reader, fileName string) ([]sample, error) {
	var out []sample
	br := benchfmt.NewReader(r, fileName)
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok {
			continue // a syntax error on a non-result line, or unit metadata
		}
		base, parts := res.Name.Parts()
		s := sample{bench: string(base), cpu: 1, values: map[string]float64{}}
		var rest []string
		for _, p := range parts {
			ps := string(p)
			switch {
			case strings.HasPrefix(ps, "-"):
				n, err := strconv.Atoi(ps[1:])
				if err != nil {
					return nil, fmt.Errorf("summary: %s: GOMAXPROCS %q", res.Name, ps)
				}
				s.cpu = n
			case strings.HasPrefix(ps, "/impl="):
				s.impl = strings.TrimPrefix(ps, "/impl=")
			default:
				rest = append(rest, ps)
			}
		}
		s.scenario = s.bench + strings.Join(rest, "")
		for _, v := range res.Values {
			unit, val := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, val = v.OrigUnit, v.OrigValue
			}
			s.values[unit] = val
		}
		out = append(out, s)
	}
	return out, br.Err()
}

// row is one scenario at one -cpu value.
type row struct {
	scenario string
	cpu      int
}

// data holds every run of every implementation, in input order.
type data struct {
	rows []row                       // in first-seen order
	runs map[row]map[string][]sample // row → impl → runs
}

func collect(samples []sample) *data {
	d := &data{runs: map[row]map[string][]sample{}}
	for _, s := range samples {
		r := row{s.scenario, s.cpu}
		m, ok := d.runs[r]
		if !ok {
			m = map[string][]sample{}
			d.runs[r] = m
			d.rows = append(d.rows, r)
		}
		m[s.impl] = append(m[s.impl], s)
	}
	return d
}

// The implementations by role. Names not listed are ignored by the tables.
var (
	algorithms = []string{"tokenbucket", "gcra", "fixedwindow", "slidingcounter", "slidinglog", "service"}
	peers      = []string{"xtime", "golimiter", "throttled", "ulule"}
)

// labels are the scenarios' names in the summary, in its order.
var labels = []struct{ scenario, label string }{
	{"Allow/mode=serial/keys=1/hit=allow", "one key, serial, allow"},
	{"Allow/mode=serial/keys=1/hit=deny", "one key, serial, deny"},
	{"Allow/mode=parallel/keys=1/hit=allow", "hot key, allow"},
	{"Allow/mode=parallel/keys=1/hit=deny", "hot key, deny"},
	{"Allow/mode=parallel/keys=100000/dist=uniform/hit=allow", "100k keys, uniform, allow"},
	{"Allow/mode=parallel/keys=100000/dist=uniform/hit=deny", "100k keys, uniform, deny"},
	{"Allow/mode=parallel/keys=100000/dist=zipf/hit=mixed", "100k keys, Zipf, mixed"},
	{"Insert/mode=parallel", "new keys (first call)"},
}

func label(scenario string) string {
	for _, l := range labels {
		if l.scenario == scenario {
			return l.label
		}
	}
	return scenario
}

func order(scenario string) int {
	for i, l := range labels {
		if l.scenario == scenario {
			return i
		}
	}
	return len(labels)
}

// comparedRows are the rows of the Allow and Insert benchmarks that have the
// mutex port, in the summary's order.
func (d *data) comparedRows() []row {
	var out []row
	for _, r := range d.rows {
		_, ok := d.runs[r]["mutex"]
		if ok && (strings.HasPrefix(r.scenario, "Allow/") || strings.HasPrefix(r.scenario, "Insert/")) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b row) int {
		return cmp.Or(cmp.Compare(order(a.scenario), order(b.scenario)), strings.Compare(a.scenario, b.scenario),
			cmp.Compare(a.cpu, b.cpu))
	})
	return out
}

// stat is the median of a set of ratios and their range.
type stat struct {
	med, lo, hi float64
	n           int
}

func summarize(xs []float64) (stat, bool) {
	if len(xs) == 0 {
		return stat{}, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return stat{med: median(s), lo: s[0], hi: s[len(s)-1], n: len(s)}, true
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

func values(runs []sample, unit string) []float64 {
	var out []float64
	for _, s := range runs {
		if v, ok := s.values[unit]; ok {
			out = append(out, v)
		}
	}
	return out
}

func medianOf(runs []sample, unit string) (float64, bool) {
	st, ok := summarize(values(runs, unit))
	return st.med, ok
}

// ratios pairs each run of a with the run of b of the same round and run
// index, for unit; runs without a partner are left out.
func ratios(a, b []sample, unit string) (stat, bool) {
	type at struct{ round, run int }
	vb := map[at]float64{}
	for _, s := range b {
		if v, ok := s.values[unit]; ok {
			vb[at{s.round, s.run}] = v
		}
	}
	var rs []float64
	for _, s := range a {
		va, ok := s.values[unit]
		if v, found := vb[at{s.round, s.run}]; ok && found && v > 0 {
			rs = append(rs, va/v)
		}
	}
	return summarize(rs)
}

func (s stat) String() string {
	return fmt.Sprintf("%s [%s-%s]", ratio(s.med), ratio(s.lo), ratio(s.hi))
}

func ratio(v float64) string {
	if v >= 10 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// hit returns the scenario's expected outcome: allow, deny, mixed or "".
func hit(scenario string) string {
	for p := range strings.SplitSeq(scenario, "/") {
		if v, ok := strings.CutPrefix(p, "hit="); ok {
			return v
		}
	}
	if strings.HasPrefix(scenario, "Insert") {
		return "allow"
	}
	return ""
}

// wrong reports whether a run admitted what its scenario's policy does not:
// a denial at hit=allow or an admission at hit=deny. A run's wrong-calls,
// where reported, counts those calls exactly; a run without it (an older
// file) is judged by allowed/op, whose four printed digits read 1.000 for
// one denial in 100,000 calls.
func wrong(runs []sample, h string) bool {
	for _, s := range runs {
		if n, ok := s.values["wrong-calls"]; ok {
			if n != 0 {
				return true
			}
			continue
		}
		v, ok := s.values["allowed/op"]
		if ok && ((h == "allow" && v != 1) || (h == "deny" && v != 0)) {
			return true
		}
	}
	return false
}

// bestPeer returns the peer with the lowest median ns/op in r among those
// whose every run admitted what the policy says, and the peers left out.
func (d *data) bestPeer(r row) (best string, excluded []string) {
	bestNs := math.Inf(1)
	for _, p := range peers {
		runs := d.runs[r][p]
		ns, ok := medianOf(runs, "ns/op")
		if !ok {
			continue
		}
		if wrong(runs, hit(r.scenario)) {
			excluded = append(excluded, p)
			continue
		}
		if ns < bestNs {
			best, bestNs = p, ns
		}
	}
	return best, excluded
}

// present returns the names of list that have runs in any of rows.
func (d *data) present(list []string, rows []row) []string {
	var out []string
	for _, n := range list {
		for _, r := range rows {
			if len(d.runs[r][n]) > 0 {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

func runCount(d *data, rows []row) (lo, hi int) {
	lo = math.MaxInt
	for _, r := range rows {
		for _, runs := range d.runs[r] {
			lo, hi = min(lo, len(runs)), max(hi, len(runs))
		}
	}
	return lo, hi
}

// write prints the whole summary.
func write(w io.Writer, samples []sample) error {
	d := collect(samples)
	rows := d.comparedRows()
	var sections int
	if len(rows) > 0 {
		sections++
		writeGlance(w, d, rows)
		writeRatios(w, d, rows)
		writeCoarse(w, d, rows)
		writeFloor(w, d)
	}
	if writeHotKeyRatio(w, d) {
		sections++
	}
	if writeSweep(w, samples) {
		sections++
	}
	if writeMemory(w, samples) {
		sections++
	}
	if writeService(w, d) {
		sections++
	}
	if writeFlood(w, samples) {
		sections++
	}
	if sections == 0 {
		return errors.New("summary: no results of BenchmarkAllow, BenchmarkInsert, BenchmarkHotKeyRatio, BenchmarkAutoSweep, BenchmarkMemory, BenchmarkService or BenchmarkFlood in the input")
	}
	return nil
}

// glanceAlg is the algorithm of the summary's first table: the token bucket,
// the model of the mutex port it is compared with.
const glanceAlg = "tokenbucket"

// verdict says how every run of a ratio of hotlimit's ns/op to another's
// compares with 1; of a single run (-count 1) it says only that, since one
// run cannot show that runs agree.
func verdict(s stat) string {
	switch {
	case s.n == 1:
		return "one run"
	case s.hi < 1:
		return "faster"
	case s.lo > 1:
		return "slower"
	default:
		return "either way"
	}
}

// glanceCell is glanceAlg's ratio to base in r with its verdict and the name
// named, or "–".
func glanceCell(d *data, r row, base, named string) string {
	st, ok := ratios(d.runs[r][glanceAlg], d.runs[r][base], "ns/op")
	if !ok {
		return "–"
	}
	s := cell(d, r, glanceAlg, base)
	if named != "" {
		s += " " + named
	}
	return s + ", " + verdict(st)
}

// writeGlance prints the summary's first table, the answer in a few lines:
// per scenario and -cpu, glanceAlg against the fastest peer (named) and
// against the mutex port, each with whether hotlimit was faster or slower in
// every run; on one hot key, also against the mutex port in alternating
// blocks (BenchmarkHotKeyRatio), the ratio that a shared machine disturbs
// least. Its lines are indented, apart from the tables below.
func writeGlance(w io.Writer, d *data, rows []row) {
	if len(d.present([]string{glanceAlg}, rows)) == 0 {
		return
	}
	fmt.Fprintf(w, "At a glance: %s, hotlimit's token bucket, against the fastest peer that kept to the policy (named)\n", glanceAlg)
	fmt.Fprintf(w, "and against the mutex port (the original design: a mutex per key): its ns/op divided by theirs, the median\n")
	fmt.Fprintf(w, "of the runs [min-max]; \"faster\" or \"slower\" when every run agrees, else \"either way\" (\"one run\"\n")
	fmt.Fprintf(w, "when there is only one). On one hot key, \"blocks\" is the ratio to the mutex port timed in alternating\n")
	fmt.Fprintf(w, "blocks, the one to trust on a busy machine.\n")
	fmt.Fprintf(w, "Every algorithm and the peers left out: below. Each row's policy: the header of bench/bench_test.go.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  scenario\tcpu\t%s ÷ fastest peer\t%s ÷ mutex port\t\n", glanceAlg, glanceAlg)
	for _, r := range rows {
		if len(d.runs[r][glanceAlg]) == 0 {
			continue
		}
		peer := "–"
		if best, _ := d.bestPeer(r); best != "" {
			peer = glanceCell(d, r, best, best)
		}
		mutex := glanceCell(d, r, "mutex", "")
		if rest, ok := strings.CutPrefix(r.scenario, "Allow/mode=parallel/keys=1/"); ok {
			blocks := row{"HotKeyRatio/" + rest, r.cpu}
			if st, ok := summarize(values(d.runs[blocks][glanceAlg], "lockfree/mutex")); ok {
				mutex += fmt.Sprintf("; blocks %s, %s", st, verdict(st))
			}
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t\n", label(r.scenario), r.cpu, peer, mutex)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func writeRatios(w io.Writer, d *data, rows []row) {
	algs := d.present(algorithms, rows)
	lo, hi := runCount(d, rows)
	runs := strconv.Itoa(lo)
	if hi != lo {
		runs = fmt.Sprintf("%d-%d", lo, hi)
	}
	fmt.Fprintf(w, "ns/op of each hotlimit algorithm divided by the mutex port's (impl=mutex, a mutex per key), then by the\n")
	fmt.Fprintf(w, "fastest peer's in the same row; below 1 hotlimit is faster. Each cell: the median of %s per-run ratios\n", runs)
	fmt.Fprintf(w, "(run i against run i) [their min-max]. ! = some run admitted what the policy does not.\n\n")

	writeAlgTable(w, "÷ mutex port", rows, algs, func(r row) string { return label(r.scenario) },
		func(r row, a string) string { return cell(d, r, a, "mutex") })

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "÷ fastest peer\tcpu\tpeer\t%s\t\n", strings.Join(algs, "\t"))
	var notes []string
	for _, r := range rows {
		best, excluded := d.bestPeer(r)
		for _, p := range excluded {
			notes = append(notes, fmt.Sprintf("%s -cpu %d: %s left out, it denied or admitted against the policy", label(r.scenario), r.cpu, p))
		}
		cells := make([]string, len(algs))
		for i, a := range algs {
			cells[i] = "–"
			if best != "" {
				cells[i] = cell(d, r, a, best)
			}
		}
		if best == "" {
			best = "–"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t\n", label(r.scenario), r.cpu, best, strings.Join(cells, "\t"))
	}
	tw.Flush()
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	fmt.Fprintln(w)
}

// cell is impl's ns/op ratio to base in r.
func cell(d *data, r row, impl, base string) string {
	st, ok := ratios(d.runs[r][impl], d.runs[r][base], "ns/op")
	if !ok {
		return "–"
	}
	s := st.String()
	if wrong(d.runs[r][impl], hit(r.scenario)) {
		s += " !"
	}
	return s
}

// writeHotKeyRatio prints BenchmarkHotKeyRatio: each algorithm against the
// mutex port on one hot key, timed in alternating blocks within one
// benchmark; a cell is the median over the runs of the benchmark's own
// median of per-block ratios (lockfree/mutex), with their range.
func writeHotKeyRatio(w io.Writer, d *data) bool {
	var rows []row
	for _, r := range d.rows {
		if strings.HasPrefix(r.scenario, "HotKeyRatio/") {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return false
	}
	slices.SortStableFunc(rows, func(a, b row) int {
		return cmp.Or(strings.Compare(a.scenario, b.scenario), cmp.Compare(a.cpu, b.cpu))
	})
	algs := d.present(algorithms, rows)
	fmt.Fprintln(w, "hot key, each algorithm and the mutex port timed in alternating blocks within one benchmark")
	fmt.Fprintln(w, "(BenchmarkHotKeyRatio): the median of the per-block ratios algorithm ÷ mutex port; each cell the median")
	fmt.Fprintln(w, "of the runs [min-max]. Both halves of a block see the same load, unlike the runs paired above.")
	writeAlgTable(w, "÷ mutex port, blocks", rows, algs,
		func(r row) string { return "hot key, " + strings.TrimPrefix(r.scenario, "HotKeyRatio/hit=") },
		func(r row, a string) string {
			if st, ok := summarize(values(d.runs[r][a], "lockfree/mutex")); ok {
				return st.String()
			}
			return "–"
		})
	return true
}

// writeAlgTable prints a table of one row per scenario and -cpu and one
// column per algorithm, headed head, each cell from cell, then a blank line.
func writeAlgTable(w io.Writer, head string, rows []row, algs []string, rowLabel func(row) string, cell func(row, string) string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tcpu\t%s\t\n", head, strings.Join(algs, "\t"))
	for _, r := range rows {
		cells := make([]string, len(algs))
		for i, a := range algs {
			cells[i] = cell(r, a)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t\n", rowLabel(r), r.cpu, strings.Join(cells, "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// writeCoarse prints impl=coarse apart: its clock only moves when its ticker
// goroutine runs, so its speed comes with its admission error.
func writeCoarse(w io.Writer, d *data, rows []row) {
	var lines [][]string
	for _, r := range rows {
		runs := d.runs[r]["coarse"]
		if len(runs) == 0 {
			continue
		}
		vsMutex := "–"
		if st, ok := ratios(runs, d.runs[r]["mutex"], "ns/op"); ok {
			vsMutex = st.String()
		}
		adm := "–"
		switch hit(r.scenario) {
		case "allow":
			// The policy admits every call. allowed/op prints 1.000 for a
			// few denials in 100,000: wrong-calls, where reported, counts them.
			if st, ok := summarize(values(runs, "allowed/op")); ok {
				adm = st.String()
			}
			var denied float64
			var in int
			for _, n := range values(runs, "wrong-calls") {
				if n != 0 {
					denied += n
					in++
				}
			}
			if in > 0 {
				adm += fmt.Sprintf(", %.0f calls denied in %d of %d runs", denied, in, len(runs))
			}
		case "mixed":
			// The same token bucket on the real clock admits what the policy does.
			if st, ok := ratios(runs, d.runs[r]["tokenbucket"], "allowed/op"); ok {
				adm = st.String()
			}
		case "deny":
			if st, ok := summarize(values(runs, "allowed/op")); ok && st.hi > 0 {
				adm = fmt.Sprintf("admitted %s of calls it should deny", st)
			} else if ok {
				adm = "0 (exact)"
			}
		}
		lines = append(lines, []string{label(r.scenario), strconv.Itoa(r.cpu), vsMutex, adm})
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintln(w, "impl=coarse (tokenbucket on a CoarseClock of 1 ms) is not in the tables above: its clock stops when its")
	fmt.Fprintln(w, "ticker goroutine gets no CPU, so it admits less than its policy. admitted: allow, allowed/op (policy: 1);")
	fmt.Fprintln(w, "mixed, allowed/op ÷ tokenbucket's on the real clock. Median of the runs [min-max].")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "coarse\tcpu\t÷ mutex port\tadmitted ÷ policy\t")
	for _, l := range lines {
		fmt.Fprintln(tw, strings.Join(l, "\t")+"\t")
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// writeFloor prints serial tokenbucket and gcra against the sum of the parts
// of a decision (map load + monotonic clock + CAS) measured in the same run.
func writeFloor(w io.Writer, d *data) {
	parts := map[string][]sample{}
	for _, r := range d.rows {
		if r.cpu == 1 && strings.HasPrefix(r.scenario, "Parts/part=") {
			parts[strings.TrimPrefix(r.scenario, "Parts/part=")] = d.runs[r][""]
		}
	}
	// The sum of each round's (and run's) three parts, paired as ratios pairs.
	var sum []sample
	for _, l := range parts["mapload"] {
		total, ok := l.values["ns/op"]
		for _, part := range []string{"monotonic", "cas"} {
			i := slices.IndexFunc(parts[part], func(s sample) bool { return s.round == l.round && s.run == l.run })
			if i < 0 {
				ok = false
				break
			}
			v, found := parts[part][i].values["ns/op"]
			ok = ok && found
			total += v
		}
		if ok {
			sum = append(sum, sample{values: map[string]float64{"ns/op": total}, round: l.round, run: l.run})
		}
	}
	sumStat, ok := summarize(values(sum, "ns/op"))
	if !ok {
		return
	}
	var cells []string
	for _, a := range []string{"tokenbucket", "gcra", "fixedwindow", "slidingcounter", "slidinglog"} {
		runs := d.runs[row{"Allow/mode=serial/keys=1/hit=allow", 1}][a]
		if st, ok := ratios(runs, sum, "ns/op"); ok {
			cells = append(cells, fmt.Sprintf("%s %s", a, st))
		}
	}
	if len(cells) == 0 {
		return
	}
	fmt.Fprintf(w, "floor: serial allow ÷ (map load + monotonic clock + CAS = %.1f ns, same run): %s\n\n",
		sumStat.med, strings.Join(cells, ", "))
}

// writeSweep prints BenchmarkAutoSweep's latency metrics.
func writeSweep(w io.Writer, samples []sample) bool {
	groups := map[string][]sample{}
	var names []string
	for _, s := range samples {
		if s.bench != "AutoSweep" {
			continue
		}
		name := strings.TrimPrefix(s.scenario, "AutoSweep")
		name = strings.TrimPrefix(name+"/impl="+s.impl, "/")
		if _, ok := groups[name]; !ok {
			names = append(names, name)
		}
		groups[name] = append(groups[name], s)
	}
	if len(names) == 0 {
		return false
	}
	fmt.Fprintln(w, "one Allow with auto-sweep on, inserting new keys (BenchmarkAutoSweep): median of the runs [min-max]")
	for _, name := range names {
		runs := groups[name]
		var f []string
		for _, m := range []struct{ unit, what string }{{"p50-ns", "p50"}, {"p99.9-ns", "p99.9"}, {"max-ns", "max"}} {
			if st, ok := summarize(values(runs, m.unit)); ok {
				f = append(f, fmt.Sprintf("%s %s [%s-%s]", m.what, dur(st.med), dur(st.lo), dur(st.hi)))
			}
		}
		if st, ok := summarize(values(runs, "over-1ms")); ok {
			f = append(f, fmt.Sprintf("calls over 1 ms %g [%g-%g]", st.med, st.lo, st.hi))
		}
		if st, ok := summarize(values(runs, "held")); ok {
			f = append(f, fmt.Sprintf("keys held at the end %.0f [%.0f-%.0f]", st.med, st.lo, st.hi))
		}
		fmt.Fprintf(w, "  %s, %d runs of %.0f keys: %s\n", name, len(runs), runs[0].values["keys"], strings.Join(f, ", "))
	}
	fmt.Fprintln(w)
	return true
}

// dur formats nanoseconds.
func dur(ns float64) string {
	switch {
	case ns >= 1e6:
		return strconv.FormatFloat(ns/1e6, 'g', 3, 64) + " ms"
	case ns >= 1e3:
		return strconv.FormatFloat(ns/1e3, 'g', 3, 64) + " µs"
	default:
		return strconv.FormatFloat(ns, 'g', 3, 64) + " ns"
	}
}

// writeMemory prints cmd/memory's BenchmarkMemory lines: heap bytes per idle key.
func writeMemory(w io.Writer, samples []sample) bool {
	type mem struct {
		impl          string
		perKey, after float64
		keys          float64
	}
	var ms []mem
	for _, s := range samples {
		if s.bench != "Memory" {
			continue
		}
		after := math.NaN()
		if v, ok := s.values["B/key-evicted"]; ok {
			after = v
		}
		ms = append(ms, mem{s.impl, s.values["B/key"], after, s.values["keys"]})
	}
	if len(ms) == 0 {
		return false
	}
	fmt.Fprintf(w, "heap bytes per idle key after %.0f keys (cmd/memory; the key strings each keeps included), after eviction in ():\n", ms[0].keys)
	var h, p []string
	for _, m := range ms {
		s := fmt.Sprintf("%s %.0f", m.impl, m.perKey)
		if !math.IsNaN(m.after) {
			s += fmt.Sprintf(" (%.0f)", m.after)
		} else {
			s += " (never evicts)"
		}
		if slices.Contains(algorithms, m.impl) || m.impl == "coarse" {
			h = append(h, s)
		} else {
			p = append(p, s)
		}
	}
	fmt.Fprintf(w, "  hotlimit: %s\n  others:   %s\n\n", strings.Join(h, ", "), strings.Join(p, ", "))
	return true
}

// writeService prints BenchmarkService: per pair count and -cpu, the median
// over the runs [min-max] of the service's ns per call as a ratio to the bare
// token bucket's (each run's own median over blocks), and the heap per pair
// of each.
func writeService(w io.Writer, d *data) bool {
	var rows []row
	for _, r := range d.rows {
		if strings.HasPrefix(r.scenario, "Service/") && len(values(d.runs[r][""], "service/bare")) > 0 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return false
	}
	fmt.Fprintln(w, "the service at scale (BenchmarkService): Allow(user, api) of pairs seen before, parallel, uniform, against")
	fmt.Fprintln(w, "the bare token bucket under the same keys, in alternating blocks; service ÷ bare: median of the runs [min-max];")
	fmt.Fprintln(w, "B/pair: heap per pair held")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "pairs\tcpu\tservice ÷ bare\tservice ns/call\tB/pair service\tbare\t÷\t")
	for _, r := range rows {
		runs := d.runs[r][""]
		st, _ := summarize(values(runs, "service/bare"))
		ns, _ := medianOf(runs, "service-ns/call")
		bs, _ := medianOf(runs, "B/pair-service")
		bb, _ := medianOf(runs, "B/pair-bare")
		div := "–"
		if bb > 0 {
			div = ratio(bs / bb)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.0f\t%.0f\t%.0f\t%s\t\n", strings.TrimPrefix(r.scenario, "Service/pairs="), r.cpu, st, ns, bs, bb, div)
	}
	tw.Flush()
	fmt.Fprintln(w)
	return true
}

// writeFlood prints cmd/flood's BenchmarkFlood line: the heap after a flood
// of distinct idle pairs against the pairs still held. The bytes per pair
// held are heap-B over held, rounded once as cmd/flood rounds them: the
// line's B/held-pair, already rounded to a tenth, would round again
// (144.505 B is 144.5 there, then 144 here where cmd/flood printed 145).
func writeFlood(w io.Writer, samples []sample) bool {
	found := false
	for _, s := range samples {
		if s.bench != "Flood" {
			continue
		}
		v := s.values
		perHeld := v["B/held-pair"]
		if v["held"] > 0 {
			perHeld = v["heap-B"] / v["held"]
		}
		fmt.Fprintf(w, "flood (cmd/flood): %.0f distinct pairs through a default service, one request each: heap +%.1f MB at the end\n",
			v["pairs"], v["heap-B"]/(1<<20))
		fmt.Fprintf(w, "  (peak +%.1f MB) for %.0f pairs held, %.0f B per pair held; %.0f ns per pair\n\n",
			v["peak-B"]/(1<<20), v["held"], perHeld, v["ns/pair"])
		found = true
	}
	return found
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: summary FILE...  (go test -bench output of the bench module)")
		os.Exit(2)
	}
	// A missing or unreadable file (a step of run.sh that failed) leaves its
	// part out of the summary, says so, and makes the exit status 1.
	var samples []sample
	status := 0
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err == nil {
			var s []sample
			s, err = parse(f, name)
			f.Close()
			samples = append(samples, s...)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "summary: %v: left out\n", err)
			status = 1
		}
	}
	if err := write(os.Stdout, samples); err != nil {
		fmt.Fprintln(os.Stderr, err)
		status = 1
	}
	os.Exit(status)
}
