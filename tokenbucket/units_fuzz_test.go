package tokenbucket

import (
	"math/bits"
	"testing"
	"time"
)

// unitsByDivision is packed.Bucket.Units written with the 128/64-bit
// division it replaces: ⌊t·PerWindow/Window⌋ mod 2^64 and the remainder.
func unitsByDivision(perWindow, window, t uint64) (u, rem uint64) {
	hi, lo := bits.Mul64(t, perWindow)
	hi %= window
	return bits.Div64(hi, lo, window)
}

// FuzzUnits: the refill's conversion of time to units, which multiplies by
// a precomputed 128-bit fraction of the rate, equals the division, for every
// layout New's ranges give (limit and burst in [1, 2^20], window in [1 ms,
// 24 h]) and every limiter time in [0, maxTime].
func FuzzUnits(f *testing.F) {
	f.Add(uint64(5), uint64(time.Second), uint64(5), uint64(400*time.Millisecond))
	f.Add(uint64(MaxLimit), uint64(MinWindow), uint64(MaxBurst), uint64(maxTime))
	f.Add(uint64(1), uint64(MaxWindow), uint64(1), uint64(maxTime-1))
	f.Add(uint64(3), uint64(7*time.Millisecond), uint64(10), uint64(1<<40+12345))
	f.Add(uint64(1000), uint64(time.Millisecond), uint64(1), uint64(0))
	f.Fuzz(func(t *testing.T, limit, window, burst, at uint64) {
		limit = 1 + limit%MaxLimit
		window = uint64(MinWindow) + window%uint64(MaxWindow-MinWindow+1)
		burst = 1 + burst%MaxBurst
		b, err := layoutFor(limit, burst, window)
		if err != nil {
			t.Skip()
		}
		for _, at := range []uint64{at % (maxTime + 1), at % (1 << 40), maxTime - at%(1<<32)} {
			u, rem := b.Units(at)
			wu, wrem := unitsByDivision(b.PerWindow, b.Window, at)
			if u != wu || rem != wrem {
				t.Fatalf("%d per %v burst %d F=%d: Units(%d) = %d, %d; the division gives %d, %d",
					limit, time.Duration(window), burst, b.FracBits, at, u, rem, wu, wrem)
			}
		}
	})
}
