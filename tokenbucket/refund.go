package tokenbucket

import (
	"math"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

var _ hotlimit.Refunder = (*Limiter)(nil)

// Refund gives back the tokens r took from key, as far as they still count:
// r.N tokens less what the bucket has refilled since r.At (the time of the
// Take), and never above the burst. A refund at the time of the Take restores
// the bucket exactly; later it gives back less, and nothing from a fill time
// on.
//
// Why less what has refilled: had the Take not been made, the bucket would
// have held r.N more tokens, up to the burst, so the refills it would have
// had on top were cut off whenever it was full. After refilling R units since
// r.At the difference between the two buckets is at least N − R (it shrinks
// only while the fuller one is capped, and by no more than it refills), and
// may be less: so N − R is what the refund may give back without ever
// creating a token the Take did not take, whatever other takes and refunds
// came in between. (A tighter bound, counting from when the bucket would
// have been full without the Take, is not safe: other refunds made later
// would have filled it sooner.) Time counts up to the later of the clock and
// the key's latest write, so a refund whose clock reading is stale gives back
// less, never more; a clock that stepped back behind r.At counts no time for
// the step, which refilled nothing; and an earlier r.At only gives back less
// (a composite relies on that). The refill is counted on the bucket's grid
// of units (2^−F token, see the package documentation), so each refund may
// leave the count up to a unit above or below the exact model's: with a clock
// that never goes back, after k refunds it is within k + 1 units of it.
//
// A zero Receipt, or one with N < 1, gives back nothing; so does a refund
// for a key the limiter does not hold (it was full when swept, so the Take no
// longer counts). Refund never inserts a key, and allocates nothing
// but for the visits below.
//
// A refund that fills the bucket leaves its memory for a visit to free: about one
// such refund in ten pays for those visits, visiting 32 keys as an auto-sweep
// step does, so that a limiter never swept does not grow by a key's memory
// per refund. With hotlimit.WithAutoSweep or hotlimit.WithMaxKeys, those
// visits evict idle keys too, and allocate a few bytes; without either, they
// only free what the keys that refunds deleted left, evict nothing, and
// allocate nothing: the keys held stay until a Sweep.
func (l *Limiter) Refund(key string, r hotlimit.Receipt) {
	if r.N < 1 {
		return
	}
	c, ok := l.cells.Peek(key)
	if !ok {
		return
	}
	give := uint64(min(r.N, l.burst)) << l.b.FracBits
	tA := l.since(r.At)
	uA, _ := l.b.Units(tA)
	t, gen, _ := l.read()
	// The CAS loop keeps the invariant of cell, with refunds among the
	// writes: the new word is the word read, refilled to now, plus the
	// refund, capped at Cap, with the refill's timestamp (now, or a later
	// one kept). It is a function of the word's value and now only, so the
	// CAS makes read, refill, refund and write one step: a concurrent
	// admission or refund changes the word, fails the CAS, and the loop
	// computes again from the new value (the refund counts time up to the
	// word's latest timestamp, which only ever grows, so a retry never gives
	// back more than the first try would have on that word). A tombstone
	// means the key was full after the Take, at a sweep or at another
	// refund that filled it: nothing counts any more. The wrap guard is kept as in Take: the word is read only under
	// the generation its clock reading was checked against.
	for {
		w := c.word.Load()
		if w == packed.BucketDead {
			return
		}
		if l.swept.Load() != gen {
			t, gen, _ = l.read()
			continue
		}
		now, _ := l.b.Units(t)
		var refilled uint64 // units refilled from r.At to now
		if t > tA {
			if t-tA >= uint64(l.fill) {
				return // a fill time since the Take: nothing of it counts
			}
			refilled = now - uA // exact mod 2^64, and below Cap
		}
		tokens, last := l.b.Unpack(w)
		tokens, last = l.b.Refill(tokens, last, now)
		// Up to the later of now and last, which Refill keeps when a clock
		// read behind the key's latest write (below 2^(T−1) units ahead).
		// With a clock read behind r.At this counts from r.At, not now: the
		// step back refilled nothing, so only what the bucket refilled from
		// r.At to last counts (nothing if last is not after r.At, a key the
		// step back found fresh).
		ahead := (last - now) & (1<<l.b.TickBits - 1)
		if t > tA {
			refilled += ahead
		} else {
			refilled = ahead - min(ahead, uA-now)
		}
		if tokens == l.b.Cap || refilled >= give {
			return
		}
		// A refund that fills the bucket kills the cell instead: a full
		// bucket equals no bucket, and so no full word ever comes back once
		// changed. If one could (a Take and its Refund at one clock reading
		// give Pack(Cap, u) again), a caller that loaded it before and
		// stalled would CAS its stale reading into the cell after a sweep
		// judged it, and break the wrap guard's invariant G (guard.go). The
		// next caller revives a new cell; a stalled CAS on this one fails.
		// The refund then deletes the key if it still maps to the dead cell
		// (keyed.Map.Drop), as Sweep does; a caller that met the tombstone
		// revives the key whether or not that deletion came first.
		next := l.b.Pack(min(l.b.Cap, tokens+give-refilled), last)
		if tokens+give-refilled >= l.b.Cap {
			next = packed.BucketDead
		}
		if c.word.CompareAndSwap(w, next) {
			if next == packed.BucketDead {
				l.cells.Drop(key, c) // not held, as after a Sweep
			}
			return
		}
	}
}

// at returns the clock reading of the limiter's time t: epoch + t, saturated
// at math.MaxInt64.
func (l *Limiter) at(t uint64) int64 {
	if l.epoch > 0 && t > uint64(math.MaxInt64-l.epoch) {
		return math.MaxInt64
	}
	return l.epoch + int64(t)
}

// since returns the limiter's time of the clock reading at: nanoseconds since
// the epoch, clamped to [0, maxTime], as time does.
func (l *Limiter) since(at int64) uint64 {
	if at < l.epoch {
		return 0
	}
	return min(uint64(at)-uint64(l.epoch), maxTime)
}
