package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const input = `goos: linux
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=mutex         	 1000	       100.0 ns/op	 1.000 allowed/op	 0 B/op	 0 allocs/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=mutex         	 1000	       120.0 ns/op	 1.000 allowed/op	 0 B/op	 0 allocs/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=mutex-8       	 1000	       200.0 ns/op	 1.000 allowed/op	 0 B/op	 0 allocs/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=tokenbucket   	 1000	        55.0 ns/op	 1.000 allowed/op	 0 B/op	 0 allocs/op
BenchmarkAllow/mode=parallel/keys=1/hit=allow/impl=tokenbucket-8 	 1000	        50.0 ns/op	 1.000 allowed/op	 0 B/op	 0 allocs/op
BenchmarkParts/part=cas-2 	 1000	        5.0 ns/op
--- BENCH: something
PASS
`

func TestParseAndTable(t *testing.T) {
	samples, err := parse(strings.NewReader(input))
	require.NoError(t, err)
	require.Len(t, samples, 6)
	assert.Equal(t, sample{"Allow/mode=parallel/keys=1/hit=allow/impl=mutex", 8, 200}, samples[2])

	m := medians(samples)
	sc := "Allow/mode=parallel/keys=1/hit=allow"
	assert.Equal(t, 110.0, m[key{sc, "mutex", 1}], "median of two runs")
	assert.Equal(t, []string{"mutex", "tokenbucket"}, impls(m), "parts have no impl")

	var tb bytes.Buffer
	table(&tb, m)
	assert.Contains(t, tb.String(), "| "+sc+" | 1 | 110 | 55.0 (0.50×) |")
	assert.Contains(t, tb.String(), "| "+sc+" | 8 | 200 | 50.0 (0.25×) |")

	var svgOut bytes.Buffer
	svg(&svgOut, m)
	s := svgOut.String()
	assert.True(t, strings.HasPrefix(s, "<svg"))
	assert.Equal(t, 2, strings.Count(s, "<polyline"), "one line per impl in the hot-key allowed panel")
	assert.Contains(t, s, "no data", "panels without results say so")
}

// TestColorsDistinct checks that no two impls share a colour.
func TestColorsDistinct(t *testing.T) {
	seen := map[string]string{}
	for name, c := range colors {
		other, dup := seen[c]
		assert.False(t, dup, "%s and %s share %s", name, other, c)
		seen[c] = name
	}
	assert.NotContains(t, seen, otherColor, "impls without a colour of their own get one no impl has")
	for _, n := range implOrder {
		assert.Contains(t, colors, n)
	}
}

// TestSameYRange checks that every panel has the same y axis: data a decade
// apart in two panels give both panels the same tick labels.
func TestSameYRange(t *testing.T) {
	m := map[key]float64{
		{"Allow/mode=parallel/keys=1/hit=allow", "mutex", 2}:                        30,
		{"Allow/mode=parallel/keys=1/hit=deny", "mutex", 2}:                         20,
		{"Allow/mode=parallel/keys=100000/dist=uniform/hit=allow", "mutex", 2}:      400,
		{"Allow/mode=parallel/keys=100000/dist=uniform/hit=deny", "mutex", 2}:       3000,
		{"Allow/mode=parallel/keys=100000/dist=uniform/hit=deny", "tokenbucket", 2}: 900,
	}
	dlo, dhi := yRange(m)
	assert.Equal(t, 1.0, dlo, "20 ns is in the decade from 10")
	assert.Equal(t, 4.0, dhi, "3000 ns is in the decade up to 10^4")

	var out bytes.Buffer
	svg(&out, m)
	s := out.String()
	for _, label := range []string{">10ns<", ">100ns<", ">1µs<", ">10µs<"} {
		assert.Equal(t, len(panels), strings.Count(s, label), "tick %s on every panel", label)
	}
}
