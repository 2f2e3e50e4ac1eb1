package fixedwindow

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// cell is one key's state, a single word laid out by internal/packed
// (window.go):
//
//	| window index mod 2^42 (42 bits) | count (22 bits) |
//	| bits 63..22                     | bits 21..0      |
//
// The index is ⌊now/Window⌋ of the window the count belongs to; the count is
// how many requests that window admitted, in [0, limit]. A count of zero is a
// fresh key whatever the index, since nothing was counted: the zero value of
// cell is fresh. It is the only live word of count zero: a refund that would
// empty a window tombstones the word instead (refund.go), since a stale
// reading would take a refunded word of count zero for a fresh one and count
// in its own, earlier window. packed.WindowDead, whose count is all ones, is the tombstone
// Sweep swaps in; no live word equals it, as limit ≤ packed.MaxWindowLimit.
//
// Writers: the word is only ever written by compare-and-swap, by Allow and
// Take (admissions), by Refund (which lowers the count of r.At's window, or
// tombstones the word when that empties it, see refund.go) and by kill (the
// tombstone); nobody stores to it.
//
// The CAS loop of Allow and Take keeps this invariant: with a clock that never
// decreases, the requests admitted for a key in window i and not refunded,
// over all the cells the key has had, number at most limit.
//
//   - Concurrent writers. The new word is a function of the old word's value and
//     the caller's now only. The CAS succeeds only if the word still holds the
//     value the caller read, so reading, deciding and writing take effect as one
//     step at the CAS; if another caller wrote in between, the CAS fails and
//     the loop decides again from the new value. (The value reappearing in
//     between, ABA, is harmless for the same reason: the decision depends on
//     the value, not on its history.) A count is only raised to count+n ≤
//     limit, and a denial writes nothing.
//   - Stale clocks. A caller whose now is older than the stored window (another
//     caller moved the word on meanwhile, or the clock stepped back) sees the
//     stored window as newer, and advance keeps it: the request counts against
//     the newer window and never resets it. The index only moves forward.
//   - Sweep. kill swaps the tombstone in by CAS from a word it judged idle:
//     count zero, or a window that ended before the sweep read the clock. If
//     an admission's CAS lands first, kill's fails and the key stays. If kill's
//     lands first, the admission's fails (it expects a live word), the caller
//     reads the tombstone, takes the key's fresh cell from Revive and decides
//     again. So no admission is recorded in a dead cell (none is lost) and a
//     dead cell never comes back to life (none is counted twice). The killed
//     cell holds no request it did not refund in the sweep's window or later,
//     as its index only moves forward (a count refunded to zero is never
//     left live: the refund's own CAS tombstones it, and the same argument
//     holds with the refund's clock reading for the sweep's, the window it
//     empties being the key's latest); a caller that revives reads the clock again,
//     and every other caller of the fresh cell read the clock after taking
//     the cell from the map, so after the sweep's clock read: the fresh cell
//     only admits in the sweep's window or later, where the killed cell's
//     count is zero.
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

// fresh is the word of a new key: packed.PackWindow(0, 0).
const fresh uint64 = 0

func newCell() *cell { return new(cell) }

// advance returns the window and count that a request in window cur counts
// against, given the stored live word w, and how many windows cur is behind
// that window: a fresh word (count zero) takes cur; otherwise packed.Advance
// decides (a later window starts at zero, the same or an earlier one keeps the
// stored window and count).
func advance(w, cur uint64) (index, count, behind uint64) {
	index, count = packed.UnpackWindow(w)
	if count == 0 {
		return cur, 0, 0
	}
	return packed.Advance(index, count, cur)
}

// kill tombstones c by CAS when its word is idle at window cur: a zero count,
// or a window older than cur. A word of the current or a later window is live.
// It reports whether c is dead: tombstoned now, or before. The CAS fails, and c is kept, if any
// write landed since the load.
func (c *cell) kill(cur uint64) bool {
	w := c.word.Load()
	if w == packed.WindowDead {
		return true // killed by a concurrent sweep or an emptying Refund: delete it if still mapped
	}
	if _, count, _ := advance(w, cur); count != 0 {
		return false
	}
	return c.word.CompareAndSwap(w, packed.WindowDead)
}

// decision reports a window holding count requests, behind windows after the
// window of now, when now is rem nanoseconds into its window. Allowed and
// RetryAfter are left for the caller.
func (l *Limiter) decision(now int64, count, behind, rem uint64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.limit - count)}
	if count > 0 {
		d.ResetAfter = l.untilEnd(now, behind, rem)
	}
	return d
}

// untilEnd returns the time from now to the end of the window behind windows
// after now's, when now is rem nanoseconds into its window: (behind+1)·Window
// − rem, or hotlimit.Never when that end lies past math.MaxInt64, the
// largest reading a clock can make: the window never ends, and no wait
// reaches its end. (That is the window holding math.MaxInt64, or a later one
// a clock stepped back from; a window index that wrapped around reads as
// one further still.)
func (l *Limiter) untilEnd(now int64, behind, rem uint64) time.Duration {
	hi, lo := bits.Mul64(behind+1, l.window)
	if hi != 0 || lo-rem > math.MaxInt64 { // lo ≥ Window > rem when hi == 0
		return hotlimit.Never
	}
	d := int64(lo - rem) // positive
	if now > 0 && d > math.MaxInt64-now {
		return hotlimit.Never // now + d, the window's end, is past every reading
	}
	return time.Duration(d)
}
