// Package satcount is a counter for metrics that must never go down: it
// stops at math.MaxInt64 rather than wrap around, as a decision may be on as
// many as math.MaxInt requests, which two such decisions would overflow.
package satcount

import (
	"math"
	"sync/atomic"
)

// Count is a counter from 0 that stops at math.MaxInt64. The zero value is
// 0. It is safe for concurrent use.
type Count struct{ n atomic.Int64 }

// smallAdd is the most that Add adds with one atomic add: a count below
// 2^63 reaches a negative value only by wrapping past math.MaxInt64, and
// from there needs 2^63 more to wrap back, 2^31 calls of smallAdd each.
const smallAdd = 1 << 32

// Add adds n > 0 to c; n ≤ 0 adds nothing.
func (c *Count) Add(n int) {
	if n <= 0 {
		return
	}
	if int64(n) <= smallAdd {
		// A wrap past math.MaxInt64 leaves a negative value, which Load
		// reads as math.MaxInt64.
		c.n.Add(int64(n))
		return
	}
	// Invariant: c never decreases as Load reads it. A negative c (already
	// past math.MaxInt64, read as it) stays as it is; else c becomes c+n,
	// or math.MaxInt64 when that overflows. A concurrent Add of either
	// kind between the Load and the CompareAndSwap changes c, so the swap
	// fails and the loop reads again: no add is lost, and none is undone.
	for {
		old := c.n.Load()
		if old < 0 {
			return
		}
		next := old + int64(n)
		if next < old {
			next = math.MaxInt64
		}
		if c.n.CompareAndSwap(old, next) {
			return
		}
	}
}

// Load returns c: math.MaxInt64 once it has gone past it.
func (c *Count) Load() int64 {
	if v := c.n.Load(); v >= 0 {
		return v
	}
	return math.MaxInt64
}
