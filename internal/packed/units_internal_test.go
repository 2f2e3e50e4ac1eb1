package packed

import (
	"math"
	"math/big"
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

// TestUnitsAtTheEdges: Units gives what the division gives at the readings
// where a fixed-point fraction fails first. With g = gcd(part, Window), the
// exact t·part/Window is a multiple of 1/W', W' = Window/g. Where it is a whole
// number, a fraction rounded down falls one short; where it lies 1/W' below
// one, a fraction rounded up with too few bits reaches the next whole number,
// and does so first at the largest t. So the readings are each class's
// smallest t and the largest below 2^62 (the limiter's time) and 2^64.
func TestUnitsAtTheEdges(t *testing.T) {
	layouts := []Bucket{
		NewBucket(5, 5, uint64(time.Second), 18),
		NewBucket(3, 3, uint64(7*time.Millisecond), 15),
		NewBucket(1, 1, uint64(24*time.Hour), 28),
		NewBucket(1<<20, 1<<20, uint64(time.Millisecond), 0),
		NewBucket(1<<20-1, 1, uint64(24*time.Hour)-1, 32),
		NewBucket(1, 1, 1<<62-57, 0), // a prime window: every fraction k/W occurs
		NewBucket(1<<29-3, 7, 1<<62-1, 32),
	}
	for _, layout := range layouts {
		w := new(big.Int).SetUint64(layout.Window)
		p := new(big.Int).SetUint64(layout.units.part)
		g := new(big.Int).GCD(nil, nil, p, w)
		wg := new(big.Int).Quo(w, g)
		var starts []*big.Int
		starts = append(starts, big.NewInt(0)) // t·part/Window whole
		if wg.Cmp(big.NewInt(1)) > 0 {
			// t ≡ −(part/g)^−1 mod W': t·part/Window = k + (W'−1)/W'.
			inv := new(big.Int).ModInverse(new(big.Int).Quo(p, g), wg)
			starts = append(starts, new(big.Int).Mod(new(big.Int).Neg(inv), wg))
		}
		for class, t0 := range starts {
			for _, limit := range []uint64{0, 1 << 62, math.MaxUint64} {
				var at uint64
				switch {
				case limit == 0:
					at = t0.Uint64()
				default: // the largest t ≡ t0 mod W' at or below limit
					top := new(big.Int).SetUint64(limit)
					top.Sub(top, new(big.Int).Mod(new(big.Int).Sub(top, t0), wg))
					at = top.Uint64()
				}
				u, rem := layout.Units(at)
				wu, wrem := unitsByDivision(layout, at)
				if u != wu || rem != wrem {
					t.Errorf("layout %+v, class %d: Units(%d) = %d, %d; the division gives %d, %d",
						layout, class, at, u, rem, wu, wrem)
				}
				// The fixture: a whole quotient, or one 1/W' short of whole.
				if want := [...]uint64{0, layout.Window - g.Uint64()}[class]; wrem != want {
					t.Errorf("layout %+v, class %d: reading %d has remainder %d, not %d", layout, class, at, wrem, want)
				}
			}
		}
	}
}
