package slidingcounter

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

var _ hotlimit.Refunder = (*Limiter)(nil)

// Refund gives back what r took from key while r.At's window still weighs
// on the key's estimate: it lowers that window's count by r.N (not below
// zero), the current count while r.At's window is the stored one, the
// previous count once the key has moved on to the next window. Two windows
// later the count no longer weighs on any decision, and a refund gives
// nothing back. The count of r.At's window includes r's requests (a Take
// counts in the window its receipt names), so lowering it by r.N gives the
// key exactly the counts it would have had without that Take.
//
// A refund that lowers both counts to zero evicts the key, as Sweep would:
// its next request starts from zero, as a new key's does.
//
// A zero Receipt, or one with N < 1, gives back nothing; so does a refund
// for a key the limiter does not hold (it was swept: both its counts had
// stopped weighing, or a refund had emptied them). Refund never inserts a
// key, and allocates nothing
// but for the visits below.
//
// A refund that empties the key leaves its memory for a visit to free: about one
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
	at, _ := packed.Window(r.At, l.window)
	if cur, _ := packed.Window(l.clock(), l.window); int64(cur)-int64(at) >= 2 {
		// r.At's window ended a window ago or more: its count weighs on
		// nothing. Checked on the full indices, not on the word's (mod
		// 2^30), which would take a receipt 2^30 windows old for one of the
		// current window, and lower a count that holds other requests.
		return
	}
	at &= indexMask
	give := uint64(r.N)
	// CAS loop. Invariant (cell's, with refunds among the writes): each of
	// the word's counts is its window's admissions less its refunds, in CAS
	// order, within [0, limit]. The new word is a function of the loaded
	// value only: the same window index with one count lowered, chosen by
	// that index. The CAS succeeds only if the word still holds that value,
	// so a concurrent admission (which may have moved the word on a window,
	// turning cur into prev) or refund fails it, and the loop decides again
	// from the new value: a refund never lowers a count of a window other
	// than r.At's. A tombstone means both counts had stopped weighing, or
	// were zero: nothing to give back.
	//
	// A refund that empties both counts kills the cell instead: both counts
	// zero equal no key (Sweep evicts it), and a live word of counts zero
	// would read as fresh to advance whatever its index, so a caller that
	// loaded an older word, read the clock in an earlier window, full
	// perhaps, and stalled before its CAS would, on reloading, count there,
	// past the limit, instead of against the stored window. On the tombstone
	// that caller's CAS fails; it revives a fresh cell and reads the clock
	// again, after the refund, so (with a clock that never goes back) in the
	// word's window or later, where nothing counts now. The refund that
	// killed it then deletes the key if it still maps to the dead cell
	// (keyed.Map.Drop), as Sweep does; a caller that met the tombstone
	// revives the key whether or not that deletion came first.
	for {
		w := c.word.Load()
		if w == dead {
			return
		}
		index, prev, count := unpack(w)
		switch {
		case index == at && count > 0:
			count -= min(give, count)
		case (index-1)&indexMask == at && prev > 0:
			prev -= min(give, prev)
		default:
			return // r.At's window no longer weighs, or its count is zero
		}
		next := dead // both counts zero: evict, as Sweep would
		if prev != 0 || count != 0 {
			next = pack(index, prev, count)
		}
		if c.word.CompareAndSwap(w, next) {
			if next == dead {
				l.cells.Drop(key, c) // not held, as after a Sweep
			}
			return
		}
	}
}
