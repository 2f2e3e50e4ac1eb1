// Package models holds the sequential reference models of hotlimit's
// algorithms: plain, single-goroutine, exact implementations written from
// each package's documentation and nothing else, against which the tests of
// the in-memory limiters and of redislimit replay random sequences of calls
// and clock steps.
//
// A model is not safe for concurrent use. Times are clock readings in
// nanoseconds; every model answers Take(key, n) at a reading with the
// [hotlimit.Decision] the limiter must give, field by field (the token
// bucket's, whose in-memory limiter counts in fixed point, also exposes its
// exact token counts and waits, for tests that compare within a unit).
//
// The models keep their own arithmetic simple rather than fast (math/big for
// the token bucket and GCRA, binary search for the sliding counter's waits),
// so that they check the limiters' closed forms instead of repeating them.
package models

import (
	"math/big"

	"github.com/hotlimit/hotlimit"
)

// FloorDiv returns ⌊a/b⌋ for b > 0.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// windowReceipt is the receipt of a windowed limiter (fixed window, sliding
// counter) for d, its Decision of Take(key, n) at now, when the key's
// window, held after the Take, has index idx in windows of window
// nanoseconds: n requests counted at now, or, when now lies behind the key's
// window (a clock that stepped back), at the start of that window, where
// they count; the zero Receipt when denied or n < 1.
func windowReceipt(d hotlimit.Decision, n int, now, idx, window int64) hotlimit.Receipt {
	if !d.Allowed || n < 1 {
		return hotlimit.Receipt{}
	}
	at := now
	// The key's window is now's or a later one, whose start lies after
	// now: an int64.
	if idx > FloorDiv(now, window) {
		at = idx * window
	}
	return hotlimit.Receipt{N: n, At: at}
}

// CeilRat returns ⌈q⌉ for q ≥ 0 that fits an int64.
func CeilRat(q *big.Rat) int64 {
	n, r := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int))
	if r.Sign() > 0 {
		n.Add(n, big.NewInt(1))
	}
	return n.Int64()
}

// FloorRat returns ⌊q⌋ for q that fits an int64.
func FloorRat(q *big.Rat) int64 {
	return new(big.Int).Div(q.Num(), q.Denom()).Int64() // Euclidean: floored, as Denom > 0
}
