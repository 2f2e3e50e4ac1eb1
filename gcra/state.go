package gcra

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
)

// cell is one key's state, a single word: the key's theoretical arrival time
// (TAT), in ticks since the limiter's epoch (see tickFor).
//
//	| TAT, ticks since the epoch (bits 63..0)           |
//	| 0: fresh ("long ago", the epoch) .. 2^63−1: live  |
//	| 2^64−1: dead, the tombstone Sweep swaps in        |
//
// The key holds burst − (TAT − s)/T tokens at time s when TAT > s, and is
// full (burst tokens) when TAT ≤ s. The limiter's time s lies in [0,
// s(maxTime)] and every admission writes TAT ≤ s + span, so a live TAT
// never exceeds s(maxTime) + span ≤ 2^63 − 1 (maxTimeFor): no sum overflows and no
// live word equals dead. The zero word, the epoch, is at or before every
// time: the zero value of cell is a fresh, full key, and a full key reads
// exactly as a fresh one.
//
// Writers: the word is only ever written by compare-and-swap, by Allow and
// Take (admissions), by Refund (which lowers it, see refund.go) and by kill
// (the tombstone); nobody stores to it.
//
// The CAS loop of Allow and Take keeps this invariant: the word is the TAT
// produced by the admissions whose CAS succeeded, each applied once, in CAS
// order, by GCRA's rule TAT' = max(TAT, s) + n·T, admitted only when
// TAT' ≤ s + span, less what refunds gave back. So admissions only raise the
// word, and for any time a (the clock reading of the earliest admission
// considered) and b (of the latest), the admissions in between that were not
// refunded take at most burst + (b − a)/T requests.
//
//   - Concurrent writers. The new word is a function of the old word's value
//     and the caller's s only. The CAS succeeds only if the word still holds
//     the value the caller read, so reading, deciding and writing take effect
//     as one step at the CAS; if another caller wrote in between, the CAS
//     fails and the loop decides again from the new value. (ABA, the value
//     reappearing, is harmless: the decision depends on the value, not on its
//     history. Admissions only raise the word, but a refund lowers it, so a
//     value can come back: a stalled caller's CAS on it then applies the
//     rule to that value at its own reading, as a caller with that reading
//     arriving after the refund would, and raises the word by exactly n·T
//     from at least that value: see Order of clock readings.) A denial
//     writes nothing: it takes effect at its Load.
//   - Order of clock readings. A caller whose s is older than another's that
//     already wrote sees a TAT that is further ahead of its s: it is judged
//     more strictly, never more leniently, and its write still raises the TAT
//     by exactly n·T from at least the stored value. No token is made.
//   - Sweep. kill swaps the tombstone in by CAS from a word it found full at
//     the sweep's time. If an admission's CAS lands first, kill's fails and
//     the key stays. If kill's lands first, the admission's fails (it expects a
//     live word), the caller reads the tombstone, takes the key's fresh cell
//     from Revive, reads the clock again and decides again. So no admission is
//     recorded in a dead cell (none is lost) and a dead cell never comes back
//     to life (none is counted twice). The fresh cell is full, which is what
//     the killed one was at the sweep's time and every later one; and every
//     caller of the fresh cell read the clock after the kill (after Revive, or
//     after Get returned the new cell).
//   - Progress. A CAS fails only because another caller's CAS or a kill
//     succeeded, so every retry follows someone's progress: nobody waits for
//     anybody. A failed CAS retries at once, with no back-off: the failed
//     locked instruction leaves the word's cache line with this core, so
//     the reload and the next CAS are cheap, where a pause hands the line
//     back to the winner (measured on two cores, one hot key: a back-off of
//     4 to 64 spins made admissions typically 10-20% slower).
type cell struct {
	word atomic.Uint64
}

const (
	// fresh is the word of a new key: a TAT at the epoch, full at any time.
	fresh uint64 = 0
	// dead is the tombstone; no live TAT reaches it (live words are < 2^63).
	dead uint64 = math.MaxUint64
)

func newCell() *cell { return new(cell) }

// kill tombstones c by CAS when it is full at s (its TAT is not after s) and
// reports whether c is dead: tombstoned now, or before. The CAS fails, and c is kept, if any write landed
// since the load.
func (c *cell) kill(s uint64) bool {
	w := c.word.Load()
	if w == dead {
		return true // already killed by a concurrent sweep: delete it if still mapped
	}
	if w > s {
		return false // not full
	}
	return c.word.CompareAndSwap(w, dead)
}

// tickFor returns the limiter's clock, as num/den ticks per nanosecond, and
// the emission interval T = window/limit in ticks, for a burst of burst
// requests. The limiter's time is s(t) = ⌊t·num/den⌋ ticks at t nanoseconds
// since the epoch, and T is a whole number of ticks, so every TAT is exact in
// ticks.
//
//   - Exact: with g = gcd(window, limit) and D = limit/g ≤ MaxScale, a tick
//     is 1/D ns (num = D, den = 1) and T = window/g ticks. s(t) = t·D is the
//     clock reading itself: the limiter is the exact model.
//   - Fine: otherwise (D > MaxScale: 17 per second, 1<<20 per millisecond) a
//     tick is 1/2^F of T, T = 2^F ticks, num/den = limit·2^F/window reduced,
//     with F ≤ MaxFracBits the largest that keeps maxTimeFor at least
//     MinTime; F ≥ 4 within New's ranges (at 1<<20 per millisecond, F = 4).
//     s(t) is the clock floored to a tick, which lags it by less than 1/2^F
//     of a token (1/16 at most): the limiter is the exact model run on that
//     floored clock. The floors telescope, s(b) − s(a) is (b − a)·num/den
//     less than one tick or more than minus one, however many calls split the
//     interval: no error accumulates.
func tickFor(limit, window, burst uint64) (num, den, tsc uint64) {
	g := gcd(window, limit)
	if d := limit / g; d <= MaxScale {
		return d, 1, window / g
	}
	for f := uint(MaxFracBits); ; f-- {
		num, den = limit<<f, window
		g := gcd(num, den)
		num, den = num/g, den/g
		if f == 0 || maxTimeFor(num, den, burst<<f) >= MinTime {
			return num, den, 1 << f
		}
	}
}

// maxTimeFor returns the last nanosecond (since the epoch) at which the
// limiter's time s(t) = ⌊t·num/den⌋ plus span ticks stays below 2^63:
// ⌊(2^63 − 1 − span)·den/num⌋, saturated at 2^63 − 1. span < 2^63.
func maxTimeFor(num, den, span uint64) uint64 {
	hi, lo := bits.Mul64(math.MaxInt64-span, den)
	if hi >= num {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, num)
	return min(q, math.MaxInt64)
}

// gcd returns the greatest common divisor of a and b.
func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// ceilDiv returns ⌈a/b⌉ for b > 0, without overflow.
func ceilDiv(a, b uint64) uint64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// ticks returns the limiter's time, in ticks, at ns nanoseconds since the
// epoch, ns ≤ maxTime: ⌊ns·num/den⌋, below 2^63 − span (see maxTimeFor),
// by multiplication (packed.Scale, exact wherever the quotient fits 64
// bits), not by a 128/64-bit division, which every decision would pay.
func (l *Limiter) ticks(ns uint64) uint64 {
	if l.den == 1 {
		return ns * l.num
	}
	q, _ := l.tick.Apply(ns)
	return q
}

// now reads the clock: s is the limiter's time in ticks, ns the reading in
// nanoseconds since the epoch, clamped to [0, maxTime]; lag is how far a
// reading before the epoch is behind it.
func (l *Limiter) now() (s, ns, lag uint64) {
	c := l.clock()
	if c < l.epoch {
		return 0, 0, uint64(l.epoch) - uint64(c)
	}
	ns = min(uint64(c)-uint64(l.epoch), l.maxTime)
	return l.ticks(ns), ns, 0
}

// decision reports a key whose TAT is tat at time s (ticks), read at ns with
// the clock lag behind the epoch: Remaining is the whole tokens it holds,
// ResetAfter the time until it is full. Allowed and RetryAfter are left for
// the caller.
func (l *Limiter) decision(tat, s, ns, lag uint64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: l.limit, Remaining: int(l.burst)}
	if tat > s {
		if ahead := tat - s; ahead < l.span {
			d.Remaining = int((l.span - ahead) / l.tsc)
		} else {
			d.Remaining = 0 // a clock that went back: no tokens, none owed
		}
		d.ResetAfter = l.wait(tat, ns, lag)
	}
	return d
}

// wait returns the least duration after which the limiter's time reaches x
// ticks, from the reading ns (since the epoch, whose time is below x) with
// the clock lag behind the epoch (nothing refills until the clock is back at
// the epoch): lag + ⌈x·den/num⌉ − ns nanoseconds, as s(t) ≥ x exactly when
// t ≥ x·den/num. Never when the limiter's time stops before x, or past
// math.MaxInt64.
func (l *Limiter) wait(x, ns, lag uint64) time.Duration {
	hi, lo := bits.Mul64(x, l.den)
	if hi >= l.num {
		return hotlimit.Never // ⌈x·den/num⌉ ≥ 2^64
	}
	t, r := bits.Div64(hi, lo, l.num)
	if r != 0 {
		t++
	}
	if t > l.maxTime {
		return hotlimit.Never
	}
	d, carry := bits.Add64(t-ns, lag, 0)
	if carry != 0 || d > math.MaxInt64 {
		return hotlimit.Never
	}
	return time.Duration(d)
}
