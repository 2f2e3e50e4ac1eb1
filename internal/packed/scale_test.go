package packed_test

import (
	"math"
	"math/big"
	"testing"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// FuzzScale checks Scale.Apply against big.Int: ⌊t·P/W⌋ modulo 2^64 and
// t·P mod W, for every P, W ≥ 1 and t.
func FuzzScale(f *testing.F) {
	for _, s := range [][3]uint64{
		{1, 1, 0}, {7, 1, math.MaxUint64}, {1, 3, math.MaxUint64}, {2, 3, 1<<63 + 1},
		{1 << 20, 1_000_000, 1 << 62}, {math.MaxUint64, math.MaxUint64 - 1, math.MaxUint64},
		{1<<62 - 57, 1<<62 - 57, 12345}, {3, 1<<62 - 57, math.MaxUint64}, {65536 << 32, 1_000_000, 999_999_999},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, p, w, at uint64) {
		if w == 0 {
			return // NewScale needs W ≥ 1
		}
		s := packed.NewScale(p, w)
		q, rem := s.Apply(at)
		x := new(big.Int).Mul(new(big.Int).SetUint64(at), new(big.Int).SetUint64(p))
		wq, wr := new(big.Int).QuoRem(x, new(big.Int).SetUint64(w), new(big.Int))
		if q != lowBits(wq, 64) || rem != wr.Uint64() {
			t.Fatalf("NewScale(%d, %d).Apply(%d) = %d, %d; want %s mod 2^64, %s", p, w, at, q, rem, wq, wr)
		}
	})
}
