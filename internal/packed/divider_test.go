package packed

import (
	"math"
	"math/bits"
	"testing"

	"github.com/stretchr/testify/assert"
)

// checkDivider compares divRem with bits.Div64 for d ≥ 1 and hi < d.
func checkDivider(t *testing.T, d, hi, lo uint64) {
	t.Helper()
	wq, wr := bits.Div64(hi, lo, d)
	q, r := newDivider(d).divRem(hi, lo)
	if q != wq || r != wr {
		t.Fatalf("(%d·2^64 + %d)/%d: got %d rem %d, want %d rem %d", hi, lo, d, q, r, wq, wr)
	}
}

// TestDividerEdges: the divisors and dividends at the ends of their ranges,
// where each correction step is taken or only just not taken.
func TestDividerEdges(t *testing.T) {
	ds := []uint64{1, 2, 3, 7, 10, 1<<32 - 1, 1 << 32, 1<<32 + 1, 1000000, 86400e9,
		1<<63 - 1, 1 << 63, 1<<63 + 1, math.MaxUint64 - 1, math.MaxUint64}
	for _, d := range ds {
		for _, hi := range []uint64{0, 1, d / 2, d - 2, d - 1} {
			if hi >= d {
				continue
			}
			for _, lo := range []uint64{0, 1, d - 1, d, d + 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64} {
				checkDivider(t, d, hi, lo)
			}
		}
	}
	q, r := newDivider(86400e9).divRem(1, 5)
	assert.Equal(t, uint64(213503), q, "2^64+5 over a day in ns")
	assert.Equal(t, uint64(1<<64-213503*86400e9+5), r)
}

// FuzzDivider: divRem equals the division for every divisor and every
// dividend whose quotient fits 64 bits.
func FuzzDivider(f *testing.F) {
	f.Add(uint64(1), uint64(0), uint64(0))
	f.Add(uint64(86400e9), uint64(86400e9-1), uint64(math.MaxUint64))
	f.Add(uint64(1e6), uint64(12345), uint64(1<<63))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64-1), uint64(math.MaxUint64))
	f.Add(uint64(1<<63), uint64(1<<63-1), uint64(1))
	f.Fuzz(func(t *testing.T, d, hi, lo uint64) {
		d = max(d, 1)
		checkDivider(t, d, hi%d, lo)
		// Divisors in the windows the limiters accept, [1 ms, 24 h], and
		// the reduction Units makes of a high word at or above them.
		w := uint64(1e6) + d%uint64(86400e9-1e6+1)
		checkDivider(t, w, hi%w, lo)
		checkDivider(t, w, 0, hi)
	})
}
