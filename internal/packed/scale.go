package packed

import "math/bits"

// Scale is the map t ↦ (⌊t·P/W⌋, t·P mod W) for fixed P and W ≥ 1, computed
// without dividing: the ratio is split, once, into a whole part and a 128-bit
// fraction rounded up, and each use costs two multiplications, independent
// of each other, and two additions. It is exact for every t < 2^64 whose
// quotient fits 64 bits, as the 128/64-bit division would be (see Apply).
type Scale struct {
	w uint64
	// P = whole·W + part, and fracHi·2^64 + fracLo = ⌈2^128·part/W⌉.
	whole, part, fracHi, fracLo uint64
}

// NewScale returns the Scale of P/W, for w ≥ 1.
func NewScale(p, w uint64) Scale {
	s := Scale{w: w, whole: p / w, part: p % w}
	s.fracHi, s.fracLo = fraction128(s.part, w)
	return s
}

// fraction128 returns ⌈2^128·part/window⌉ as hi·2^64 + lo, for part <
// window: two long divisions by window, the second of the first's remainder,
// and one more when the last remainder is not zero. It is below 2^128, since
// part/window ≤ 1 − 1/window.
func fraction128(part, window uint64) (hi, lo uint64) {
	hi, r := bits.Div64(part, 0, window) // part < window: fits 64 bits
	lo, r = bits.Div64(r, 0, window)     // r < window
	if r != 0 {
		var carry uint64
		lo, carry = bits.Add64(lo, 1, 0)
		hi += carry
	}
	return hi, lo
}

// Apply returns ⌊t·P/W⌋ modulo 2^64 and the remainder t·P mod W, exactly as
// the 128/64-bit division would, for every t, without a correction step; a
// caller that drops rem drops two of the multiplications.
//
// Proof. With P = whole·W + part, the quotient is t·whole + ⌊x⌋, x =
// t·part/W, and the remainder is t·part − ⌊x⌋·W. Let φ = fracHi·2^64 +
// fracLo = ⌈2^128·part/W⌉ and y = t·φ/2^128. Rounding up gives y ≥ x, and φ <
// 2^128·part/W + 1 gives y < x + t/2^128 < x + 2^−64. x is a multiple of
// 1/W: x = m + j/W with 0 ≤ j < W, so x ≤ y < m + (W−1)/W + 2^−64 < m + 1 (as
// 1/W > 2^−64), and ⌊y⌋ = m = ⌊x⌋. ⌊y⌋ itself, with t·fracHi = hi·2^64 + lo
// and t·fracLo = mid·2^64 + low: t·φ = hi·2^128 + (lo + mid)·2^64 + low, and
// (lo + mid)·2^64 + low < 2^129 reaches 2^128 exactly when lo + mid carries,
// so ⌊y⌋ = hi + that carry. The remainder t·part − ⌊x⌋·W lies in [0, W), so
// it is computed exactly modulo 2^64.
func (s *Scale) Apply(t uint64) (q, rem uint64) {
	hi, lo := bits.Mul64(t, s.fracHi)
	mid, _ := bits.Mul64(t, s.fracLo)
	_, carry := bits.Add64(lo, mid, 0)
	f := hi + carry // ⌊t·part/W⌋
	return t*s.whole + f, t*s.part - f*s.w
}
