package gcra

import "github.com/hotlimit/hotlimit"

var _ hotlimit.Refunder = (*Limiter)(nil)

// Refund gives back what r took from key, as far as it still counts: it
// moves the key's TAT back by r.N·T less the time elapsed since r.At (the
// time of the Take), and never behind now (a TAT at or before now is a full
// key). A refund at the time of the Take restores the key exactly; later it
// gives back less, and nothing from r.At + r.N·T on.
//
// Why less the time elapsed: GCRA is the token bucket's model (see the
// package documentation), and had the Take not been made the key would have
// held r.N more tokens, up to the burst, so the refills it would have had on
// top were cut off whenever it was full. After a time e the difference is at
// least r.N·T − e and may be less; that is what the refund may give back
// without ever creating capacity the Take did not take, whatever other takes
// and refunds came in between. An earlier r.At only gives back less (a
// composite relies on that). Time counts from r.At to the clock: none for a
// clock read behind r.At, which gives all of it back. The TAT keeps no time
// of the key's latest write, so unlike the token bucket's refund this one
// does not count up to it: a clock read behind it (stepped back) counts less
// time than the key has seen, and may give back more than the Take still
// takes (see hotlimit.Refunder).
//
// A zero Receipt, or one with N < 1, gives back nothing; so does a refund
// for a key the limiter does not hold (it was full when swept, so the Take no
// longer counts). Refund never inserts a key, and allocates nothing.
func (l *Limiter) Refund(key string, r hotlimit.Receipt) {
	if r.N < 1 {
		return
	}
	c, ok := l.cells.Peek(key)
	if !ok {
		return
	}
	give := uint64(min(uint64(r.N), l.burst)) * l.tsc
	sA := l.since(r.At)
	// CAS loop. Invariant (cell's, with refunds among the writes): the word
	// is the TAT after the admissions and refunds whose CAS succeeded, in CAS
	// order; a refund lowers it by at most what its Take still adds to it,
	// and never below the refunder's s. The clock is read after each Load, so
	// every admission the loaded word holds read its clock before this s: the
	// time elapsed since r.At is never undercounted because of a writer whose
	// clock was ahead (with a clock that never goes back). The new word is a
	// function of the loaded value and s only, and the CAS succeeds only if
	// the word still holds that value, so a concurrent admission or refund
	// fails it and the loop computes again from the new value. A tombstone
	// means the key was full at a sweep after the Take: nothing counts.
	for {
		w := c.word.Load()
		if w == dead {
			return
		}
		s, _, _ := l.now()
		if w <= s {
			return // full: nothing to give back
		}
		var elapsed uint64
		if s > sA {
			elapsed = s - sA
		}
		if elapsed >= give {
			return
		}
		next := s // not behind now: a TAT at now is a full key
		if dec := give - elapsed; w-s > dec {
			next = w - dec
		}
		if c.word.CompareAndSwap(w, next) {
			return
		}
	}
}

// at returns the clock reading ns nanoseconds after the epoch, for ns as now
// returns it: at most maxTime, which New keeps at most math.MaxInt64 − epoch
// for an epoch after 0 (and at most math.MaxInt64 for any other), so the sum
// never overflows: it is a reading the clock can make.
func (l *Limiter) at(ns uint64) int64 {
	return l.epoch + int64(ns)
}

// since returns the limiter's time, in ticks, of the clock reading at, as now
// reads it: nanoseconds since the epoch, clamped to [0, maxTime], in ticks.
func (l *Limiter) since(at int64) uint64 {
	if at < l.epoch {
		return 0
	}
	return l.ticks(min(uint64(at)-uint64(l.epoch), l.maxTime))
}
