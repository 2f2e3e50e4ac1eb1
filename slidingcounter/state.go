package slidingcounter

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
)

// cell is one key's state, a single word laid out as pack.go draws it:
//
//	| window index mod 2^30 (30 bits) | prev (17 bits) | cur (17 bits) |
//
// Both counts zero is a fresh key whatever the index, since nothing was
// counted: the zero value of cell is fresh. It is the only live word of
// counts zero: a refund that would empty both counts tombstones the word
// instead (refund.go), since a stale reading would take a refunded word of
// counts zero for a fresh one and count in its own, earlier window. dead, the
// all-ones word, is the tombstone Sweep swaps in.
//
// Writers: the word is only ever written by compare-and-swap, by Allow and
// Take (admissions), by Refund (which lowers a count, or tombstones the word
// when that empties both, see refund.go) and by kill (the tombstone); nobody
// stores to it.
//
// The CAS loop of Allow and Take keeps this invariant: every admission of n
// requests replaced a word w by advance(w, i) with n added to cur, where i is
// the caller's window and, with the estimate est = ⌊prev·(Window − e)/Window⌋
// + cur of advance(w, i) at the caller's elapsed time e, est + n ≤ limit. So a
// window's cur never exceeds limit, and with a clock that never decreases the
// requests of a key over all the cells it has had obey the model of the
// package documentation exactly.
//
//   - Concurrent writers. The new word is a function of the old word's value and
//     the caller's now only. The CAS succeeds only if the word still holds the
//     value the caller read, so reading, deciding and writing take effect as one
//     step at the CAS; if another caller wrote in between, the CAS fails and
//     the loop decides again from the new value. (ABA is harmless for the same
//     reason: the decision depends on the value, not on its history.) A denial
//     writes nothing.
//   - Stale clocks. A caller whose now is older than the stored window (another
//     caller moved the word on meanwhile, or the clock stepped back) sees the
//     stored window as newer, and advance keeps it: the request counts against
//     the newer window, as if made at its start, and never resets it. The
//     index only moves forward: advance starts a word of counts zero at the
//     caller's window whatever its index, and the only such live word is a
//     new cell's, whose callers all read the clock after taking it from the
//     map (late enough that the cell it replaced weighs nothing there: see
//     the next two points). A word whose counts a refund would take to zero
//     becomes a tombstone instead (see Refund), so a caller holding a stale
//     reading taken on that word cannot take it for a fresh key's: its CAS
//     fails on the tombstone, and it reads the clock again.
//   - Sweep. kill swaps the tombstone in by CAS from a word it judged idle:
//     both counts zero once advanced to the sweep's window i, so a stored
//     window i−2 or older (or a new cell's word). If an admission's CAS lands
//     first, kill's fails and the key stays. If kill's lands first, the
//     admission's fails (it expects a live word), the caller reads the
//     tombstone, takes the key's fresh cell from Revive, reads the clock
//     again and decides again. So no admission is recorded in a dead cell
//     (none is lost) and a dead cell never comes back to life (none is
//     counted twice). The killed cell's counts of windows i−1 and later are
//     zero (its index only moves forward, and a new cell's word weighs
//     nothing); every caller of the fresh cell read the clock after the
//     sweep did, so the fresh cell only admits in window i or later, where
//     the killed cell's counts weigh nothing. The key's decisions are those
//     of the cell never killed.
//   - Emptying refunds. Refund's CAS tombstones a word whose counts it takes
//     to zero, and the argument above holds with the refund's CAS for kill's
//     and the word's window for i: no admission's CAS lands on the dead word,
//     and every caller of the fresh cell read the clock after the refund, so,
//     with a clock that never decreases, in the word's window or later (the
//     admission whose CAS moved the word to that window read the clock in it
//     before), where the killed cell's counts, both zero, weigh nothing.
//   - Progress. A CAS fails only because another caller's CAS (a refund's
//     included) or a kill succeeded, so every retry follows someone's
//     progress: nobody waits for anybody. A failed CAS retries at once, with
//     no back-off: the failed locked instruction leaves the word's cache line
//     with this core, so the reload and the next CAS are cheap, where a pause
//     hands the line back to the winner (measured on two cores, one hot key:
//     a back-off of 4 to 64 spins made admissions typically 10-20% slower).
type cell struct {
	word atomic.Uint64
}

// fresh is the word of a new key: pack(0, 0, 0).
const fresh uint64 = 0

func newCell() *cell { return new(cell) }

// advance returns the window index and counts that a request in window cur
// counts against, given the stored live word w, and how many windows cur is
// behind that window (0 unless the clock stepped back):
//
//   - both counts zero (fresh): window cur, counts zero;
//   - the same window: w's counts;
//   - the next window: cur becomes prev, cur is zero;
//   - two or more windows later (below 2^29): both zero;
//   - an earlier window (2^29 or more ahead mod 2^30): w's window and counts,
//     kept.
func advance(w, cur uint64) (index, prev, count, behind uint64) {
	index, prev, count = unpack(w)
	if prev == 0 && count == 0 {
		return cur & indexMask, 0, 0, 0
	}
	switch ahead := (cur - index) & indexMask; {
	case ahead == 0:
		return index, prev, count, 0
	case ahead == 1:
		return cur & indexMask, count, 0, 0
	case ahead < half:
		return cur & indexMask, 0, 0, 0
	default:
		return index, prev, count, (index - cur) & indexMask
	}
}

// elapsed returns the time into the counted window a request is weighed at:
// rem, now's offset into its own window, or 0 when the counted window lies
// behind windows ahead (the request counts as made at that window's start).
func elapsed(rem, behind uint64) uint64 {
	if behind != 0 {
		return 0
	}
	return rem
}

// kill tombstones c by CAS when its word is idle at window cur: both counts
// zero once advanced to cur. It reports whether c is dead: tombstoned now, or
// before. The CAS fails,
// and c is kept, if any write landed since the load.
func (c *cell) kill(cur uint64) bool {
	w := c.word.Load()
	if w == dead {
		return true // killed by a concurrent sweep or an emptying Refund: delete it if still mapped
	}
	if _, prev, count, _ := advance(w, cur); prev != 0 || count != 0 {
		return false
	}
	return c.word.CompareAndSwap(w, dead)
}

// weigh returns prev's weight e nanoseconds into the counted window,
// ⌊prev·(Window − e)/Window⌋, for e in [0, Window). The product may need 72
// bits; the quotient is at most prev.
func (l *Limiter) weigh(prev, e uint64) uint64 {
	if prev == 0 {
		return 0
	}
	hi, lo := bits.Mul64(prev, l.window-e)
	if hi == 0 {
		return lo / l.window
	}
	q, _ := bits.Div64(hi, lo, l.window) // hi < Window: the quotient is ≤ prev
	return q
}

// fits reports whether n more requests pass on counts prev and count, e
// nanoseconds into the counted window: ⌊prev·(Window − e)/Window⌋ + count + n
// ≤ limit. With a = limit − count − n ≥ 0 the floor is at most a exactly when
// prev·(Window − e) < (a+1)·Window, compared in 128 bits without a division.
func (l *Limiter) fits(prev, count, e, n uint64) bool {
	if count+n > l.limit {
		return false
	}
	a1 := l.limit - count - n + 1
	if prev < a1 {
		return true // the weight is at most prev ≤ a
	}
	h1, l1 := bits.Mul64(prev, l.window-e)
	h2, l2 := bits.Mul64(a1, l.window)
	return h1 < h2 || h1 == h2 && l1 < l2
}

// span returns the largest x in [0, Window) with ⌊p·x/Window⌋ ≤ a, for a < p:
// ⌊((a+1)·Window − 1)/p⌋. The quotient is below Window since a+1 ≤ p, so the
// 128-bit division cannot overflow.
func (l *Limiter) span(p, a uint64) uint64 {
	hi, lo := bits.Mul64(a+1, l.window)
	lo, borrow := bits.Sub64(lo, 1, 0)
	q, _ := bits.Div64(hi-borrow, lo, p)
	return q
}

// wait returns the smallest time after which the estimate of a key holding
// counts prev and count reads at most t, nothing else being taken meanwhile,
// when now is rem nanoseconds into its window and the counted window lies
// behind windows ahead. It is called when the estimate now is above t; t ≥ 0.
//
// Until the counted window starts the estimate stays prev + count (behind
// windows: behind·Window − rem). In it, at elapsed e′, it is ⌊prev·(Window −
// e′)/Window⌋ + count, which falls with e′: if count ≤ t it reaches t at e′ =
// Window − span(prev, t − count). Otherwise not in this window; at the next
// boundary count becomes prev and cur is zero, and the estimate ⌊count·(Window
// − e″)/Window⌋ reaches t at e″ = Window − span(count, t) ≥ 1 (count < Window,
// as Window ≥ 1 ms > MaxLimit, so a whole window always suffices). The result
// is hotlimit.Never when the wait ends after math.MaxInt64, the last reading
// a clock makes, counted from now, the clock reading rem is taken from; only
// a clock near that end, or a wrapped index, reads it.
func (l *Limiter) wait(prev, count, rem, behind, t uint64, now int64) time.Duration {
	w := l.window
	base, e0 := uint64(0), rem
	if behind != 0 {
		hi, lo := bits.Mul64(behind, w)
		if hi != 0 || lo-rem > math.MaxInt64 { // lo ≥ Window > rem when hi == 0
			return hotlimit.Never
		}
		base, e0 = lo-rem, 0
	}
	var d uint64 // from the counted window's elapsed e0; below 2·Window
	if count <= t {
		if a := t - count; prev > a {
			d = max(e0, w-l.span(prev, a)) - e0
		}
	} else {
		d = (w - e0) + (w - l.span(count, t))
	}
	if base+d > clockLeft(now) { // base ≤ MaxInt64 and d < 2^57: no wrap
		return hotlimit.Never
	}
	return time.Duration(base + d)
}

// clockLeft is the longest wait a clock reaches from its reading now:
// math.MaxInt64 − now, its last reading's distance, or math.MaxInt64 for a
// reading at or before 0.
func clockLeft(now int64) uint64 {
	if now > 0 {
		return uint64(math.MaxInt64 - now)
	}
	return math.MaxInt64
}

// decision reports a key holding counts prev and count whose estimate is
// est, when now, the clock reading, is rem nanoseconds into its window and
// the counted window lies behind windows ahead. Allowed and RetryAfter are
// left for the caller.
func (l *Limiter) decision(prev, count, est, rem, behind uint64, now int64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: int(l.limit)}
	if est < l.limit {
		d.Remaining = int(l.limit - est) // est > limit only for a clock read behind
	}
	if est > 0 {
		d.ResetAfter = l.wait(prev, count, rem, behind, 0, now)
	}
	return d
}
