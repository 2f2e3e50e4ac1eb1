package packed

import "math/bits"

// divider divides 128-bit numbers by a fixed 64-bit divisor without a
// division instruction: one 64×64→128-bit multiplication by a precomputed
// reciprocal, one 64-bit multiplication and at most two corrections. It is
// algorithm 4 (2/1 division) of N. Möller and T. Granlund, "Improved
// division by invariant integers", IEEE Transactions on Computers 60(2),
// 2011, GMP's udiv_qrnnd_preinv; math/big's divWW uses the same reciprocal.
// Their Theorem 2 proves it exact: for a normalized divisor d (top bit set),
// v = ⌊(2^128 − 1)/d⌋ − 2^64 and a dividend u1·2^64 + u0 with u1 < d, it
// returns the quotient and remainder of the division. Any divisor is
// normalized by shifting it, and the dividend, left by its leading zeros; the
// quotient is unchanged and the remainder comes out shifted by as much.
type divider struct {
	d     uint64 // the divisor, shifted left by shift: its top bit is set
	v     uint64 // ⌊(2^128 − 1)/d⌋ − 2^64, for the shifted d
	shift uint   // the divisor's leading zeros
}

// newDivider returns the divider by d, d ≥ 1.
func newDivider(d uint64) divider {
	s := uint(bits.LeadingZeros64(d))
	d <<= s
	// (2^128 − 1)/d − 2^64 = ((2^64 − 1 − d)·2^64 + 2^64 − 1)/d: its high
	// word ^d is below d, so the quotient fits 64 bits.
	v, _ := bits.Div64(^d, ^uint64(0), d)
	return divider{d: d, v: v, shift: s}
}

// divRem returns ⌊(hi·2^64 + lo)/d⌋ and (hi·2^64 + lo) mod d, for hi < d:
// exactly what bits.Div64(hi, lo, d) returns.
func (v divider) divRem(hi, lo uint64) (q, r uint64) {
	// Normalize: hi < d, so hi·2^s < d·2^s and the shifted high word stays
	// below the shifted divisor. (For s = 0, lo >> 64 is 0 in Go.)
	s := v.shift
	u1 := hi<<s | lo>>(64-s)
	u0 := lo << s
	q1, q0 := bits.Mul64(v.v, u1)
	q0, c := bits.Add64(q0, u0, 0)
	q1 += u1 + c + 1
	r = u0 - q1*v.d
	if r > q0 { // the candidate was one too large
		q1--
		r += v.d
	}
	if r >= v.d { // one too small: rare
		q1++
		r -= v.d
	}
	return q1, r >> s
}
