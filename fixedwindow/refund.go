package fixedwindow

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

var _ hotlimit.Refunder = (*Limiter)(nil)

// Refund gives back what r took from key while r.At's window is the one the
// key counts: it lowers that window's count by r.N (not below zero). Once the
// window has ended the count no longer weighs on any decision, and a refund
// gives nothing back. The count of r.At's window includes r's requests (a
// Take counts in the window its receipt names), so lowering it by r.N gives
// the key exactly the state it would have had without that Take.
//
// A refund that lowers the count to zero evicts the key, as Sweep would: its
// next request starts from zero, as a new key's does.
//
// A zero Receipt, or one with N < 1, gives back nothing; so does a refund
// for a key the limiter does not hold (it was swept: its count had ended or
// was zero). Refund never inserts a key, and allocates nothing
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
	if cur, _ := packed.Window(l.clock(), l.window); int64(cur) > int64(at) {
		// r.At's window has ended: its count weighs on nothing. Checked on
		// the full indices, not on the word's (mod 2^42), which would take a
		// receipt 2^42 windows old for one of the current window, and lower
		// a count that holds other requests.
		return
	}
	want := at & (1<<packed.WindowIndexBits - 1)
	give := uint64(r.N)
	// CAS loop. Invariant (cell's, with refunds among the writes): a window's
	// count is its admissions less its refunds, in CAS order, and stays in
	// [0, limit]. The new word is a function of the loaded value only: the
	// same window with a lower count, written only when the stored window is
	// r.At's. The CAS succeeds only if the word still holds that value, so a
	// concurrent admission (which may have moved the word to a later window)
	// or refund fails it, and the loop decides again from the new value: a
	// refund can never land on a later window than the one it checked. A
	// tombstone means the key's window had ended or its count was zero:
	// nothing to give back.
	//
	// A refund that empties the window kills the cell instead: a zero count
	// equals no key (Sweep evicts it), and a live word of count zero would
	// read as fresh to advance whatever its index, so a caller that read the
	// clock in an earlier window, full perhaps, and stalled before its CAS
	// would count there, past the limit, instead of in the stored window.
	// On the tombstone that caller's CAS fails; it revives a fresh cell and
	// reads the clock again, after the refund, so (with a clock that never
	// goes back) in r.At's window or later, where nothing counts now. The
	// refund that killed it then deletes the key if it still maps to the
	// dead cell (keyed.Map.Drop), as Sweep does; a caller that met the
	// tombstone revives the key whether or not that deletion came first.
	for {
		w := c.word.Load()
		if w == packed.WindowDead {
			return
		}
		index, count := packed.UnpackWindow(w)
		if index != want || count == 0 {
			return
		}
		next := packed.WindowDead
		if give < count {
			next = packed.PackWindow(index, count-give)
		}
		if c.word.CompareAndSwap(w, next) {
			if next == packed.WindowDead {
				l.cells.Drop(key, c) // not held, as after a Sweep
			}
			return
		}
	}
}
