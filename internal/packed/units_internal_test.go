package packed

import (
	"math/bits"
	"testing"
	"time"
)

// unitsByDivision is Units with the hardware 128/64-bit division.
func unitsByDivision(b Bucket, t uint64) (u, rem uint64) {
	hi, lo := bits.Mul64(t, b.PerWindow)
	if hi >= b.Window {
		hi %= b.Window
	}
	return bits.Div64(hi, lo, b.Window)
}

var sinkU uint64

// BenchmarkUnits compares the conversion of a clock reading to units by
// Units and by the 128/64-bit division, in one process. Each reading depends
// on the previous result, so the loops measure latency, as on the hot path.
func BenchmarkUnits(b *testing.B) {
	layout := NewBucket(5, 5, uint64(time.Second), 18)
	b.Run("impl=units", func(b *testing.B) {
		t := uint64(1e15)
		for b.Loop() {
			u, r := layout.Units(t)
			t += u&1 + r&1 + 1
		}
		sinkU = t
	})
	b.Run("impl=div", func(b *testing.B) {
		t := uint64(1e15)
		for b.Loop() {
			u, r := unitsByDivision(layout, t)
			t += u&1 + r&1 + 1
		}
		sinkU = t
	})
}

// TestUnitsCorrection: the fixed-point fraction undershoots the quotient by
// one on some readings, which Units corrects; those readings, and the others,
// give what the division gives.
func TestUnitsCorrection(t *testing.T) {
	for _, layout := range []Bucket{
		NewBucket(5, 5, uint64(time.Second), 18),
		NewBucket(3, 3, uint64(7*time.Millisecond), 15),
		NewBucket(1, 1, uint64(24*time.Hour), 28),
		NewBucket(1<<20, 1<<20, uint64(time.Millisecond), 0),
	} {
		corrected := 0
		for i := range uint64(200000) {
			at := i*0x9E3779B97F4A7C15>>2 + i // spread over [0, 2^62)
			if q, _ := bits.Mul64(at, layout.frac); at*layout.part-q*layout.Window >= layout.Window {
				corrected++
			}
			u, rem := layout.Units(at)
			wu, wrem := unitsByDivision(layout, at)
			if u != wu || rem != wrem {
				t.Fatalf("layout %+v: Units(%d) = %d, %d; the division gives %d, %d", layout, at, u, rem, wu, wrem)
			}
		}
		if layout.part == 0 || corrected == 0 {
			t.Errorf("layout %+v: %d readings took the correction", layout, corrected)
		}
	}
}
