package slidinglog

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

var _ hotlimit.Refunder = (*Limiter)(nil)

// TakeReceipt is Take, plus the receipt of what it took: n requests, At the
// logged time of the first (the others are logged then or later; all at the
// time of the call or later, see hotlimit.Receipt), or the zero Receipt when
// denied or n < 1. Give them back with Refund.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, first := l.takeAt(key, n)
	if !d.Allowed || n < 1 {
		return d, hotlimit.Receipt{}
	}
	return d, hotlimit.Receipt{N: n, At: l.clockAt(first)}
}

// Refund gives back what r took from key while r's requests are still in the
// window (r.At > now − Window): it marks up to r.N of the oldest counted
// requests still in the window as refunded, and a refunded request no longer
// counts. Once r.At has left the window its requests weigh on no decision,
// and a refund gives nothing back.
//
// Right after the Take, the refund restores the key's current capacity
// exactly: as many requests pass now as before the Take. It may hold future
// capacity a little longer than the Take's absence would have: where an
// older entry is refunded in place of r's own (newer) one, r's entry stays
// until it leaves the window. (With a frozen clock, or when the entries in
// the window were all logged at r's time, it restores the log exactly.)
// Refunding the oldest keeps the free slots where the next claims find them,
// from the slot of the next claim on: refunding r's own, newest, entries
// would free slots the claims reach only after every older entry has left
// the window.
//
// Why this never creates capacity that was not taken: r's requests were
// logged at r.At or later and are still in the window, so while they count,
// the oldest counted entry in the window is never newer than a refunded
// request. Any later window that still holds the marked entry held the
// refunded one too, so marking it frees, in every window from now on, at
// most what removing the refunded request would have. (With several refunds
// the same holds by counting: for every time θ, the entries marked newer than
// θ never outnumber the refunded requests newer than θ.) The rule does not
// depend on r.At beyond the window check, so an earlier r.At never gives
// back more (a composite relies on that).
//
// A zero Receipt, or one with N < 1, gives back nothing; so does a refund for
// a key the limiter does not hold (swept: all its requests had left the
// window). Refund never inserts a key and allocates nothing.
func (l *Limiter) Refund(key string, r hotlimit.Receipt) {
	if r.N < 1 {
		return
	}
	c, ok := l.cells.Peek(key)
	if !ok {
		return
	}
	left := min(uint64(r.N), l.limit)
	// Each pass marks entries from the oldest counted one on while no claim
	// lands; one that lands starts a new pass, with what is left to give
	// back.
	for left > 0 {
		s, ok := c.read()
		switch {
		case !ok:
			continue // the ring moved on while read, or the scan went far: read again
		case s.v == packed.StampDead:
			return // swept: every request had left the window
		}
		t := max(l.now(), s.newest)
		if l.since(r.At) <= t-l.window {
			return // r's requests have left the window: nothing counts
		}
		var again bool
		if left, again = l.mark(c, s, t, left); !again {
			return
		}
	}
}

// mark marks as refunded up to left of the oldest counted entries of c in the
// window at t, s.h being c's next claim, and returns how many it still has to
// mark and whether the caller must read the ring again and start over.
//
// The CAS on a slot sets the refunded bit of the value it read and changes
// nothing else, so it keeps every invariant of cell: the slot's value grows
// (the bit is set once), and a refunded entry's slot is claimed, at a time at
// least its own, only by a claim that the entry before it in the slot (at
// least Window older) would have let through. Why the marked slots are the
// oldest counted entries: slot s.h + k (mod L) holds claim s.h − L + k while
// claim s.h has not landed (checked after each load by slot s.h mod L still
// holding s.v, or s.v marked refunded: then no later claim landed either, as
// claims land in order). Those entries' times do not change under
// a pass, only their refunded bits, which other refunds set from the oldest
// on too, so the counted ones in the window mostly follow all the others;
// but a refund racing a claim in flight can mark out of that order, so the
// pass reads the ring from the oldest entry rather than binary-search it. A CAS that
// fails means another refund marked the entry first, or a claim or a
// tombstone landed: the pass reads the slot again, and goes on past it when
// it is marked (a mark moves no request, so it sends the pass back no more
// than one on slot s.h mod L does), or starts over when the check on slot
// s.h mod L sees a claim or a tombstone, so nobody waits for anybody. That is
// lock-free, not wait-free: every read again or start over follows another
// caller's successful CAS, so some caller always progresses, but a refund can
// in principle be sent back by claims on its key indefinitely.
func (l *Limiter) mark(c *cell, s snapshot, t int64, left uint64) (uint64, bool) {
	for k := uint64(0); k < l.limit && left > 0; {
		i := c.at(s.h, k)
		v := c.load(i)
		// Slot s.i still holds s.v, or s.v marked refunded (by this pass
		// or another refund), no other value: claim s.h has not landed
		// (it writes the other parity), nor a tombstone (whose value no
		// live stamp has, marked or not). A mark moves no request, so it
		// sends no pass back to read the ring and the clock again.
		if packed.Refunded(c.load(s.i)) != packed.Refunded(s.v) {
			return left, true // claim s.h landed, or slot s.i was tombstoned
		}
		switch tv, _ := packed.UnpackStamp(v); {
		case v == packed.StampDead:
			return 0, false // swept meanwhile: every request had left the window
		case packed.IsRefunded(v) || tv <= t-l.window:
			k++
			continue // marked by another refund, or expired
		}
		if l.markHook != nil {
			l.markHook()
		}
		// The CAS sets the refunded bit of the very value read, so it
		// marks claim s.h − L + k, counted in the window at t. It fails
		// only if slot i changed since the load: another refund marked it,
		// or a claim or tombstone landed (on slot s.i first: claims land in
		// order, and a tombstone lands on the slot of the next claim).
		// Read slot i again: the check above tells the two apart.
		if c.cas(i, v, packed.Refunded(v)) {
			left--
			k++
		}
	}
	return 0, false // fewer than left counted in the window: nothing more to give
}
