// Command redistable reads the `go test -bench` output of package redisbench
// and prints, as Markdown, the median decisions/s of every impl at every g
// with its ratio to impl=redis_rate and to impl=ceiling (redis-benchmark's
// EVALSHA of `return 1` at the same concurrency) and the median time Redis
// spent per script call, the hot-key ratio of the lease, and PASS or MISS
// for each of the three targets:
//
//   - redislimit (batched) makes at least as many decisions/s as redis_rate,
//     at every g;
//   - redislimit makes at least 0.7× the ceiling's decisions/s, at every g;
//   - on one hot key (g=16) the lease makes at least 10× the decisions/s of
//     the same limiter without it.
//
// A target missing data is MISS. The exit status is 1 only when the input
// holds no results.
//
//	go run ./cmd/redistable results/redis-raw.txt
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The targets.
const (
	vsRedisRate = 1.0
	vsCeiling   = 0.7
	leaseGain   = 10.0
)

// impls are the impls of BenchmarkRedis, in the order of the table.
var impls = []string{"redislimit", "redislimit-nobatch", "redis_rate", "ceiling"}

// key names one benchmark: its top-level name (Redis, RedisHotKey), g and
// impl.
type key struct {
	bench, impl string
	g           int
}

// Units are the metrics parse reads.
const (
	rateUnit = "decisions/s"
	costUnit = "redis-us/call" // Redis's time per script call, in µs
)

// parse reads the decisions/s (rates) and redis-us/call (costs) of every
// BenchmarkRedis* result line.
func parse(r io.Reader) (rates, costs map[key][]float64, err error) {
	rates, costs = map[key][]float64{}, map[key][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "BenchmarkRedis") {
			continue
		}
		name := strings.TrimPrefix(f[0], "Benchmark")
		if i := strings.LastIndexByte(name, '-'); i >= 0 {
			if _, err := strconv.Atoi(name[i+1:]); err == nil {
				name = name[:i] // the -GOMAXPROCS suffix
			}
		}
		var k key
		for j, part := range strings.Split(name, "/") {
			switch {
			case j == 0:
				k.bench = part
			case strings.HasPrefix(part, "impl="):
				k.impl = strings.TrimPrefix(part, "impl=")
			case strings.HasPrefix(part, "g="):
				g, err := strconv.Atoi(strings.TrimPrefix(part, "g="))
				if err != nil {
					return nil, nil, fmt.Errorf("redistable: %q: %w", sc.Text(), err)
				}
				k.g = g
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			dst := map[string]map[key][]float64{rateUnit: rates, costUnit: costs}[f[i+1]]
			if dst == nil {
				continue
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, nil, fmt.Errorf("redistable: %q: %w", sc.Text(), err)
			}
			dst[k] = append(dst[k], v)
		}
	}
	return rates, costs, sc.Err()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// report writes the tables and the targets, from the samples of decisions/s
// and of Redis's time per script call (costs).
func report(w io.Writer, samples, costs map[key][]float64) {
	med := func(k key) (float64, bool) {
		v := samples[k]
		if len(v) == 0 {
			return 0, false
		}
		return median(v), true
	}
	cost := func(k key) string {
		if len(costs[k]) == 0 {
			return "–"
		}
		return strconv.FormatFloat(median(costs[k]), 'f', 2, 64)
	}
	var gs []int
	for k := range samples {
		if k.bench == "Redis" && !slices.Contains(gs, k.g) {
			gs = append(gs, k.g)
		}
	}
	slices.Sort(gs)
	ratio := func(a, b float64, okA, okB bool) string {
		if !okA || !okB || b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}

	fmt.Fprintln(w, "GCRA, each goroutine its own key; median decisions/s over runs; ceiling = redis-benchmark EVALSHA of `return 1` with -c g;")
	fmt.Fprintln(w, "Redis µs/call = Redis's own time per script call (INFO commandstats, EVALSHA and EVAL), median over runs")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| g | impl | runs | decisions/s | ÷ redis_rate | ÷ ceiling | Redis µs/call |")
	fmt.Fprintln(w, "|---:|---|---:|---:|---:|---:|---:|")
	allRate, allCeil := len(gs) > 0, len(gs) > 0
	var rateRatios, ceilRatios []string
	for _, g := range gs {
		rr, okR := med(key{"Redis", "redis_rate", g})
		ce, okC := med(key{"Redis", "ceiling", g})
		for _, im := range impls {
			k := key{"Redis", im, g}
			v, ok := med(k)
			cell := "–"
			if ok {
				cell = strconv.FormatFloat(v, 'f', 0, 64)
			}
			fmt.Fprintf(w, "| %d | %s | %d | %s | %s | %s | %s |\n", g, im, len(samples[k]), cell,
				ratio(v, rr, ok && im != "redis_rate" && im != "ceiling", okR), ratio(v, ce, ok && im != "ceiling", okC), cost(k))
		}
		v, ok := med(key{"Redis", "redislimit", g})
		rateOK := ok && okR && v >= vsRedisRate*rr
		ceilOK := ok && okC && v >= vsCeiling*ce
		allRate = allRate && rateOK
		allCeil = allCeil && ceilOK
		rateRatios = append(rateRatios, fmt.Sprintf("g=%d %s %s", g, ratio(v, rr, ok, okR), verdict(rateOK)))
		ceilRatios = append(ceilRatios, fmt.Sprintf("g=%d %s %s", g, ratio(v, ce, ok, okC), verdict(ceilOK)))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "batching: redislimit ÷ redislimit-nobatch =", func() string {
		var s []string
		for _, g := range gs {
			a, okA := med(key{"Redis", "redislimit", g})
			b, okB := med(key{"Redis", "redislimit-nobatch", g})
			s = append(s, fmt.Sprintf("g=%d %s", g, ratio(a, b, okA, okB)))
		}
		return strings.Join(s, ", ")
	}())

	fmt.Fprintln(w)
	fmt.Fprintln(w, "one hot key, GCRA (BenchmarkRedisHotKey): median decisions/s")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| g | lease | nolease | lease ÷ nolease |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	var hotGs []int
	for k := range samples {
		if k.bench == "RedisHotKey" && !slices.Contains(hotGs, k.g) {
			hotGs = append(hotGs, k.g)
		}
	}
	slices.Sort(hotGs)
	allLease := len(hotGs) > 0
	var leaseRatios []string
	for _, g := range hotGs {
		a, okA := med(key{"RedisHotKey", "lease", g})
		b, okB := med(key{"RedisHotKey", "nolease", g})
		cell := func(v float64, ok bool) string {
			if !ok {
				return "–"
			}
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s |\n", g, cell(a, okA), cell(b, okB), ratio(a, b, okA, okB))
		ok := okA && okB && a >= leaseGain*b
		allLease = allLease && ok
		leaseRatios = append(leaseRatios, fmt.Sprintf("g=%d %s %s", g, ratio(a, b, okA, okB), verdict(ok)))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "targets (medians):")
	fmt.Fprintf(w, "  %s  redislimit ≥ %.1f× redis_rate (GCRA) at every g: %s\n", verdict(allRate), vsRedisRate, strings.Join(rateRatios, ", "))
	fmt.Fprintf(w, "  %s  redislimit ≥ %.1f× the trivial-script ceiling at every g: %s\n", verdict(allCeil), vsCeiling, strings.Join(ceilRatios, ", "))
	fmt.Fprintf(w, "  %s  lease ≥ %.0f× nolease on one hot key: %s\n", verdict(allLease), leaseGain, strings.Join(leaseRatios, ", "))
}

func main() {
	samples, costs := map[key][]float64{}, map[key][]float64{}
	read := func(r io.Reader) {
		s, c, err := parse(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for k, v := range s {
			samples[k] = append(samples[k], v...)
		}
		for k, v := range c {
			costs[k] = append(costs[k], v...)
		}
	}
	if len(os.Args) < 2 {
		read(os.Stdin)
	}
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		read(f)
		f.Close()
	}
	if len(samples) == 0 {
		fmt.Fprintln(os.Stderr, "redistable: no BenchmarkRedis results with decisions/s in the input")
		os.Exit(1)
	}
	report(os.Stdout, samples, costs)
}
