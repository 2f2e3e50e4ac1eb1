package fixedwindow

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// The ranges New accepts.
const (
	// MaxLimit is the largest limit: the widest count a state word holds.
	MaxLimit = packed.MaxWindowLimit
	// MinWindow is the shortest window. Coupled with the 42-bit window index,
	// it keeps 2^41 windows, about 70 years, of unambiguous wrap-around.
	MinWindow = time.Millisecond
	// MaxWindow is the longest window, 366 days.
	MaxWindow = 366 * 24 * time.Hour
)

// Limiter admits at most a limit of requests per key in each window aligned
// on its clock's origin; see the package documentation for the model. Build
// it with New. The zero Limiter is not usable, nor is a nil *Limiter: their
// methods panic, as methods on a nil pointer do (New checks the
// configuration, so that the decisions check nothing). It is safe for
// concurrent use.
type Limiter struct {
	cells  *keyed.Map[cell]
	clock  hotlimit.Clock
	limit  uint64
	window uint64 // nanoseconds, in [MinWindow, MaxWindow]
}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a limiter that admits limit requests per key in each window.
// limit must lie in [1, MaxLimit] and window in [MinWindow, MaxWindow];
// otherwise New returns an error that names the field and its range and wraps
// hotlimit.ErrInvalidConfig.
func New(limit int, window time.Duration, opts ...hotlimit.Option) (*Limiter, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("fixedwindow: limit %d out of range [1, %d]: %w", limit, MaxLimit, hotlimit.ErrInvalidConfig)
	}
	if window < MinWindow || window > MaxWindow {
		return nil, fmt.Errorf("fixedwindow: window %v out of range [%v, %v]: %w", window, MinWindow, MaxWindow, hotlimit.ErrInvalidConfig)
	}
	o := hotlimit.NewOptions(opts...)
	if err := o.RejectBurst("fixedwindow", limit); err != nil {
		return nil, err
	}
	l := &Limiter{
		clock:  o.Clock,
		limit:  uint64(limit),
		window: uint64(window),
	}
	l.cells = keyed.New(nil, l.idle, o)
	return l, nil
}

// Allow reports whether one request from key passes, and counts it if so. It
// is Take(key, 1).Allowed, without building the Decision.
func (l *Limiter) Allow(key string) bool {
	ok, _ := l.admit(key)
	return ok
}

// admit is Allow, reporting also the requests the window holds after the
// decision: limit when a key cap turned a new key away.
func (l *Limiter) admit(key string) (allowed bool, count uint64) {
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return false, l.limit // hotlimit.WithMaxKeys: no room for a new key
	}
	// CAS loop, argued in full on cell: an admission raises a window's
	// count, by CAS from the value this call decided on, and never beyond
	// limit (only a refund lowers it); a concurrent write fails the CAS and
	// the call decides again; a tombstone (a Sweep's, or a Refund's that
	// emptied the window) sends it to the key's fresh cell, with the clock
	// read again.
	//
	// The clock is read once, after the map lookup (see cell; Find reads the
	// node from the map before the reading, and confirms its key after
	// it: see keyed.Found), and before the word, so
	// that a slow clock is not inside the window between the load and the
	// CAS; a failed CAS reloads the word and keeps the reading. Deciding on
	// a reading taken before the word is sound: an admission counts in the
	// later of the reading's window and the stored one, as a stale clock's
	// does (see cell). A denial must not come from a reading older than the
	// word's window: a key that other calls moved to a later window, full
	// perhaps, would be judged full where a fresh reading might start the
	// next window. So a denial whose reading is behind the stored window
	// reads the clock again, after the load, and decides again. A denial on
	// a reading in the stored window is the model's: the key was full in
	// that window at the load, after the reading.
	cur, _ := packed.Window(l.clock(), l.window)
	c := f.Cell(key)
	if c == nil {
		// Another key's node (see keyed.Found): look key up in full,
		// then read the clock after it.
		if c = l.cells.Get(key); c == nil {
			return false, l.limit
		}
		cur, _ = packed.Window(l.clock(), l.window)
	}
	fresh := false // whether cur was read after w was loaded
	w := c.word.Load()
	for {
		if w == packed.WindowDead {
			c = l.cells.Revive(key, c)
			cur, _ = packed.Window(l.clock(), l.window)
			w, fresh = c.word.Load(), false
			continue
		}
		index, count, behind := advance(w, cur)
		if count >= l.limit {
			if behind != 0 && !fresh {
				cur, _ = packed.Window(l.clock(), l.window)
				fresh = true
				continue
			}
			return false, count // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, packed.PackWindow(index, count+1)) {
			return true, count + 1
		}
		w, fresh = c.word.Load(), false
	}
}

// Take asks for n requests from key at once: all pass and are counted, or
// none is. Take(key, 0) reports the key's state without changing it; n greater
// than the limit or negative is denied with RetryAfter hotlimit.Never and
// changes nothing. The package documentation defines the Decision's fields.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.take(key, n)
	return d
}

// TakeReceipt is Take, plus the receipt of what it took: n requests at the
// time of the call, or at the start of the later window they counted in when
// the clock read behind the key's window (see hotlimit.Receipt); the zero
// Receipt when denied or n < 1. Give them back with Refund.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, at := l.take(key, n)
	if !d.Allowed || n < 1 {
		return d, hotlimit.Receipt{}
	}
	return d, hotlimit.Receipt{N: n, At: at}
}

// take is Take, which also returns the time the requests counted at: the
// clock reading, or the start of the window they counted in if later.
func (l *Limiter) take(key string, n int) (hotlimit.Decision, int64) {
	if n < 1 || uint64(n) > l.limit {
		return l.report(key, n), 0
	}
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return l.capped(), 0
	}
	need := uint64(n)
	// The CAS loop of Allow, for n requests at once; argued on cell. The
	// clock is read once, before the word; a failed CAS keeps the reading; a
	// denial whose reading is behind the stored window reads the clock again
	// and decides again, as in Allow.
	now := l.clock()
	c := f.Cell(key)
	if c == nil {
		// Another key's node (see keyed.Found): look key up in full,
		// then read the clock after it.
		if c = l.cells.Get(key); c == nil {
			return l.capped(), 0
		}
		now = l.clock()
	}
	fresh := false // whether now was read after w was loaded
	w := c.word.Load()
	for {
		if w == packed.WindowDead {
			c = l.cells.Revive(key, c)
			now = l.clock()
			w, fresh = c.word.Load(), false
			continue
		}
		cur, rem := packed.Window(now, l.window)
		index, count, behind := advance(w, cur)
		if count+need > l.limit {
			if behind != 0 && !fresh {
				now, fresh = l.clock(), true
				continue
			}
			d := l.decision(now, count, behind, rem)
			d.RetryAfter = d.ResetAfter // count > limit−n ≥ 0: the window's end
			return d, now
		}
		if c.word.CompareAndSwap(w, packed.PackWindow(index, count+need)) {
			d := l.decision(now, count+need, behind, rem)
			d.Allowed = true
			return d, packed.CountedAt(now, rem, behind, l.window)
		}
		w, fresh = c.word.Load(), false
	}
}

// report is Take for n == 0, n > limit and n < 0: it reads key's state and
// changes nothing, not even inserting key. A missing key reports as fresh,
// and so does a dead cell (swept, or emptied by a refund): the key's next
// cell is fresh.
//
// The clock is read between two loads of the word, unlike in Allow and
// Take, and the report judges the word only when both loads saw it: it was
// the key's state at the reading. Every writer of the word read its clock
// before its CAS, so (with a clock that never decreases) the reading is in
// the word's window or a later one. Loaded only after the reading, a word
// that another call moved to a later window meanwhile would read as that
// window seen from behind, as after a clock step back: its count, but a
// ResetAfter up to that window's end, up to two windows, where the key
// reset at most one window after the reading. Loaded only before it, a
// word that another call counted on meanwhile would miss that count. While
// the loads differ, the report starts over from the lookup, since the write
// may be a sweep's kill or a refund's, after which the key lives in another
// cell: it retries only as often as writes land on the key inside its own
// clock readings. (A take and the refund that undoes it, both between the
// loads, leave the word as it was: the report judges it as if neither had
// landed.)
func (l *Limiter) report(key string, n int) hotlimit.Decision {
	var w uint64
	var now int64
	for {
		c, held := l.cells.Peek(key)
		if !held {
			w, now = fresh, l.clock()
			break
		}
		w = c.word.Load()
		now = l.clock()
		if w == packed.WindowDead {
			w = fresh // evicted at the Load: its replacement, if any, is fresh
			break
		}
		if c.word.Load() == w {
			break
		}
	}
	cur, rem := packed.Window(now, l.window)
	_, count, behind := advance(w, cur)
	d := l.decision(now, count, behind, rem)
	if n == 0 {
		d.Allowed = true
	} else {
		d.RetryAfter = hotlimit.Never
	}
	return d
}

// Burst returns the most requests one Take passes at once: the limit; see
// hotlimit.Burster.
func (l *Limiter) Burst() int { return int(l.limit) }

// Len returns the number of keys held. While keys are inserted or deleted,
// it counts them one stripe of counters at a time, so it can be off by the
// insertions and deletions made during the call.
func (l *Limiter) Len() int {
	return l.cells.Len()
}

// Sweep evicts every key whose count is zero or whose stored window ended
// before the clock's current window, and returns how many it evicted. Such a
// key's next request starts from zero, as a new key's does. Sweep is safe to
// run concurrently with anything, Sweep included.
func (l *Limiter) Sweep() int {
	cur, _ := packed.Window(l.clock(), l.window)
	return l.cells.Sweep(func(c *cell) bool { return c.kill(cur) })
}
