// Command chart reads `go test -bench` output of the bench module and draws
// ns/op against goroutines (the -cpu values) for every impl, for one hot key
// and for 100k uniform keys, allowed and denied, as a hand-written SVG: one
// colour per impl, the same log-scale y range on every panel. With -table it
// also prints the medians as a Markdown table with each impl's ratio to
// impl=mutex. impl=coarse is left out of both (its clock can stop, so it
// admits less than its policy: not like for like; cmd/summary reports it
// with its admission error) unless -coarse is given.
//
//	go run ./cmd/chart -o results/scaling.svg -table results/raw.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// sample is one benchmark result line.
type sample struct {
	name string // without the "Benchmark" prefix and the -N suffix
	cpu  int
	ns   float64
}

// parse reads benchmark lines: name-N, iterations, then value-unit pairs.
func parse(r io.Reader) ([]sample, error) {
	var out []sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name, cpu := strings.TrimPrefix(f[0], "Benchmark"), 1
		if i := strings.LastIndexByte(name, '-'); i >= 0 {
			if n, err := strconv.Atoi(name[i+1:]); err == nil {
				name, cpu = name[:i], n
			}
		}
		for i := 2; i+1 < len(f); i += 2 {
			if f[i+1] == "ns/op" {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return nil, fmt.Errorf("chart: %q: %w", sc.Text(), err)
				}
				out = append(out, sample{name: name, cpu: cpu, ns: v})
			}
		}
	}
	return out, sc.Err()
}

// split separates a name into its impl and the rest (the scenario).
func split(name string) (scenario, impl string) {
	parts := strings.Split(name, "/")
	var rest []string
	for _, p := range parts {
		if v, ok := strings.CutPrefix(p, "impl="); ok {
			impl = v
		} else {
			rest = append(rest, p)
		}
	}
	return strings.Join(rest, "/"), impl
}

type key struct {
	scenario, impl string
	cpu            int
}

// medians groups samples by scenario, impl and cpu.
func medians(samples []sample) map[key]float64 {
	groups := map[key][]float64{}
	for _, s := range samples {
		sc, im := split(s.name)
		if im == "" {
			continue
		}
		k := key{sc, im, s.cpu}
		groups[k] = append(groups[k], s.ns)
	}
	out := map[key]float64{}
	for k, vs := range groups {
		slices.Sort(vs)
		m := vs[len(vs)/2]
		if len(vs)%2 == 0 {
			m = (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
		}
		out[k] = m
	}
	return out
}

// implOrder is the legend's and the table's order; names not in it follow.
var implOrder = []string{"mutex", "xtime", "golimiter", "throttled", "ulule", "tokenbucket", "fixedwindow", "slidinglog", "gcra", "slidingcounter", "coarse", "service"}

// colors gives every impl its own colour (the Tableau 10 palette, black for
// the baseline and a dark blue for coarse); TestColorsDistinct checks it.
var colors = map[string]string{
	"mutex": "#000000", "xtime": "#8c564b", "golimiter": "#e377c2", "throttled": "#7f7f7f", "ulule": "#bcbd22",
	"tokenbucket": "#1f77b4", "fixedwindow": "#2ca02c", "slidinglog": "#d62728", "service": "#9467bd",
	"gcra": "#17becf", "slidingcounter": "#ff7f0e", "coarse": "#393b79",
}

// otherColor is the colour of an impl missing from colors.
const otherColor = "#aec7e8"

// hotlimit impls are drawn solid and thick, the mutex baseline dotted, peers dashed.
var hotlimit = map[string]bool{"tokenbucket": true, "fixedwindow": true, "slidinglog": true, "gcra": true, "slidingcounter": true, "coarse": true, "service": true}

func impls(m map[key]float64) []string {
	seen := map[string]bool{}
	for k := range m {
		seen[k.impl] = true
	}
	var out []string
	for _, n := range implOrder {
		if seen[n] {
			out = append(out, n)
			delete(seen, n)
		}
	}
	var rest []string
	for n := range seen {
		rest = append(rest, n)
	}
	slices.Sort(rest)
	return append(out, rest...)
}

type panel struct{ title, scenario string }

var panels = []panel{
	{"one hot key, allowed", "Allow/mode=parallel/keys=1/hit=allow"},
	{"one hot key, denied", "Allow/mode=parallel/keys=1/hit=deny"},
	{"100k keys (uniform), allowed", "Allow/mode=parallel/keys=100000/dist=uniform/hit=allow"},
	{"100k keys (uniform), denied", "Allow/mode=parallel/keys=100000/dist=uniform/hit=deny"},
}

func svg(w io.Writer, m map[key]float64) {
	names := impls(m)
	var cpus []int
	for k := range m {
		if !slices.Contains(cpus, k.cpu) {
			cpus = append(cpus, k.cpu)
		}
	}
	slices.Sort(cpus)
	const (
		pw, ph        = 420, 280 // panel plot area
		left, top     = 70, 60
		gapX, gapY    = 110, 100
		legendW       = 170
		width, height = left + 2*pw + gapX + 20 + legendW, top + 2*ph + gapY + 90
		fontFamily    = "Helvetica, Arial, sans-serif"
	)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s">`+"\n", width, height, width, height, fontFamily)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="28" font-size="18" font-weight="bold">Allow: ns/op against goroutines (-cpu), lower is better</text>`+"\n", left)
	dlo, dhi := yRange(m)
	for i, p := range panels {
		x0 := left + (i%2)*(pw+gapX)
		y0 := top + (i/2)*(ph+gapY)
		drawPanel(w, m, names, cpus, p, x0, y0, pw, ph, dlo, dhi)
	}
	// Legend.
	lx, ly := left+2*pw+gapX+20, top+10
	for i, n := range names {
		y := ly + i*22
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" %s/>`+"\n", lx, y, lx+30, y, stroke(n))
		fmt.Fprintf(w, `<text x="%d" y="%d" font-size="13" dominant-baseline="middle">%s</text>`+"\n", lx+38, y, n)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="11" fill="#555">solid: hotlimit; dotted: mutex baseline; dashed: peers. Medians of the benchmark runs; log scale, the same on every panel.</text>`+"\n", left, height-14)
	fmt.Fprintln(w, `</svg>`)
}

// yRange returns the whole decades, as powers of ten, that hold every value
// of every panel, so that all panels share one y axis.
func yRange(m map[key]float64) (dlo, dhi float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range panels {
		for k, v := range m {
			if k.scenario == p.scenario && v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	dlo, dhi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi == dlo {
		dhi++
	}
	return dlo, dhi
}

func stroke(name string) string {
	c := colorOf(name)
	switch {
	case hotlimit[name]:
		return fmt.Sprintf(`stroke="%s" stroke-width="3" fill="none"`, c)
	case name == "mutex":
		return fmt.Sprintf(`stroke="%s" stroke-width="2.5" stroke-dasharray="2 4" stroke-linecap="round" fill="none"`, c)
	default:
		return fmt.Sprintf(`stroke="%s" stroke-width="2" stroke-dasharray="7 4" fill="none"`, c)
	}
}

func drawPanel(w io.Writer, m map[key]float64, names []string, cpus []int, p panel, x0, y0, pw, ph int, dlo, dhi float64) {
	has := false
	for k := range m {
		has = has || k.scenario == p.scenario
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", x0, y0-12, p.title)
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", x0, y0, pw, ph)
	if !has || len(cpus) == 0 {
		fmt.Fprintf(w, `<text x="%d" y="%d" font-size="12" fill="#999">no data</text>`+"\n", x0+pw/2-25, y0+ph/2)
		return
	}
	// Y: log10, whole decades around the data of all panels.
	yOf := func(v float64) float64 {
		return float64(y0+ph) - (math.Log10(v)-dlo)/(dhi-dlo)*float64(ph)
	}
	for d := dlo; d <= dhi; d++ {
		for _, mul := range []float64{1, 2, 5} {
			v := mul * math.Pow(10, d)
			if math.Log10(v) > dhi+1e-9 {
				continue
			}
			y := yOf(v)
			fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/>`+"\n", x0, y, x0+pw, y)
			fmt.Fprintf(w, `<text x="%d" y="%.1f" font-size="11" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", x0-6, y, ns(v))
		}
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="12" text-anchor="middle" transform="rotate(-90 %d %d)">ns/op</text>`+"\n", x0-48, y0+ph/2, x0-48, y0+ph/2)
	// X: one slot per -cpu value, evenly spaced (1, 2, 4, 8 are log-spaced).
	xOf := func(i int) float64 {
		if len(cpus) == 1 {
			return float64(x0 + pw/2)
		}
		return float64(x0+30) + float64(i)*float64(pw-60)/float64(len(cpus)-1)
	}
	for i, c := range cpus {
		fmt.Fprintf(w, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%d</text>`+"\n", xOf(i), y0+ph+16, c)
	}
	fmt.Fprintf(w, `<text x="%d" y="%d" font-size="12" text-anchor="middle">goroutines (GOMAXPROCS)</text>`+"\n", x0+pw/2, y0+ph+34)
	for _, n := range names {
		var pts []string
		for i, c := range cpus {
			if v, ok := m[key{p.scenario, n, c}]; ok {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xOf(i), yOf(v)))
			}
		}
		if len(pts) == 0 {
			continue
		}
		fmt.Fprintf(w, `<polyline points="%s" %s/>`+"\n", strings.Join(pts, " "), stroke(n))
		for _, pt := range pts {
			xy := strings.Split(pt, ",")
			fmt.Fprintf(w, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], colorOf(n))
		}
	}
}

func colorOf(n string) string {
	if c, ok := colors[n]; ok {
		return c
	}
	return otherColor
}

// ns formats a tick label.
func ns(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "ms"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "µs"
	default:
		return strconv.FormatFloat(v, 'g', 3, 64) + "ns"
	}
}

// table prints one row per scenario and cpu: each impl's median ns/op and
// its ratio to impl=mutex.
func table(w io.Writer, m map[key]float64) {
	names := impls(m)
	type row struct {
		scenario string
		cpu      int
	}
	var rows []row
	for k := range m {
		r := row{k.scenario, k.cpu}
		if !slices.Contains(rows, r) {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := strings.Compare(a.scenario, b.scenario); c != 0 {
			return c
		}
		return a.cpu - b.cpu
	})
	fmt.Fprintf(w, "| scenario | cpu | %s |\n", strings.Join(names, " | "))
	fmt.Fprintf(w, "|---|---:|%s\n", strings.Repeat("---:|", len(names)))
	for _, r := range rows {
		base, hasBase := m[key{r.scenario, "mutex", r.cpu}]
		cells := make([]string, len(names))
		for i, n := range names {
			v, ok := m[key{r.scenario, n, r.cpu}]
			switch {
			case !ok:
				cells[i] = "–"
			case hasBase && n != "mutex":
				cells[i] = fmt.Sprintf("%s (%.2f×)", num(v), v/base)
			default:
				cells[i] = num(v)
			}
		}
		fmt.Fprintf(w, "| %s | %d | %s |\n", r.scenario, r.cpu, strings.Join(cells, " | "))
	}
}

func num(v float64) string {
	if v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func main() {
	out := flag.String("o", "", "write the SVG chart to this file")
	printTable := flag.Bool("table", false, "print medians and ratios to impl=mutex as a Markdown table")
	coarse := flag.Bool("coarse", false, "include impl=coarse, whose clock can stop (it admits less than its policy)")
	flag.Parse()
	var samples []sample
	read := func(r io.Reader) {
		s, err := parse(r)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		samples = append(samples, s...)
	}
	if flag.NArg() == 0 {
		read(os.Stdin)
	}
	for _, name := range flag.Args() {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		read(f)
		f.Close()
	}
	if len(samples) == 0 {
		fmt.Fprintln(os.Stderr, "chart: no benchmark results in the input")
		os.Exit(1)
	}
	if !*coarse {
		samples = slices.DeleteFunc(samples, func(s sample) bool {
			_, im := split(s.name)
			return im == "coarse"
		})
	}
	m := medians(samples)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		svg(f, m)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *printTable {
		table(os.Stdout, m)
	}
}
