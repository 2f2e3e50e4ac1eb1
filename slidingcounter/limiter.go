package slidingcounter

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// The ranges New accepts.
const (
	// MaxLimit is the largest limit, 131070 (2^17 − 2): the widest count a
	// state word holds, below the tombstone's all-ones count.
	MaxLimit = 1<<countBits - 2
	// MinWindow is the shortest window. Coupled with the 30-bit window index,
	// it keeps 2^29 windows, about 6.2 days, of unambiguous wrap-around; it
	// also keeps Window above MaxLimit, which the RetryAfter arithmetic needs.
	MinWindow = time.Millisecond
	// MaxWindow is the longest window, 366 days.
	MaxWindow = 366 * 24 * time.Hour
)

// Limiter admits requests per key while a weighted estimate of the requests
// in the last Window, from the counts of the current and the previous
// aligned window, stays within a limit; see the package documentation for
// the model and its error bound. Build it with New. The zero Limiter is not
// usable, nor is a nil *Limiter: their methods panic, as methods on a nil
// pointer do (New checks the configuration, so that the decisions check
// nothing). It is safe for concurrent use.
type Limiter struct {
	cells  *keyed.Map[cell]
	clock  hotlimit.Clock
	limit  uint64
	window uint64 // nanoseconds, in [MinWindow, MaxWindow]
}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a limiter that admits about limit requests per key in any
// window of length window. limit must lie in [1, MaxLimit] and window in
// [MinWindow, MaxWindow]; otherwise New returns an error that names the field
// and its range and wraps hotlimit.ErrInvalidConfig.
func New(limit int, window time.Duration, opts ...hotlimit.Option) (*Limiter, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("slidingcounter: limit %d out of range [1, %d]: %w", limit, MaxLimit, hotlimit.ErrInvalidConfig)
	}
	if window < MinWindow || window > MaxWindow {
		return nil, fmt.Errorf("slidingcounter: window %v out of range [%v, %v]: %w", window, MinWindow, MaxWindow, hotlimit.ErrInvalidConfig)
	}
	o := hotlimit.NewOptions(opts...)
	if err := o.RejectBurst("slidingcounter", limit); err != nil {
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
// is Take(key, 1).Allowed, without building the Decision, and decides with
// multiplications only.
func (l *Limiter) Allow(key string) bool {
	ok, _, _, _ := l.admit(key)
	return ok
}

// admit is Allow, reporting also what the decision was made on: the previous
// window's count, the current window's after the decision, and the time
// elapsed in it, from which Remaining is computed; limit requests in the
// current window when a key cap turned a new key away.
func (l *Limiter) admit(key string) (allowed bool, prev, count, e uint64) {
	c := l.cells.Load(key) // inlined, where Get is not
	if c == nil {
		c = l.cells.Get(key) // a miss: insert
	}
	if c == nil {
		return false, 0, l.limit, 0 // hotlimit.WithMaxKeys: no room for a new key
	}
	// CAS loop, argued in full on cell. Invariant: a write replaces the word
	// the caller read by its advance with one more in cur, and only when the
	// estimate of that very word plus one is within limit. A concurrent write
	// changes the word, so this CAS fails and the call decides again from the
	// new word; a tombstone (a Sweep's, or a Refund's that emptied both
	// counts) sends it to the key's fresh cell, with the clock read again (so
	// it never counts in a window the sweep judged over, nor, with a clock
	// that never goes back, in one older than the emptied word's).
	//
	// The clock is read after the word, and a denial is only ever decided on
	// a reading taken after the word it judges: every writer of the word read
	// its clock before its CAS, so such a reading is no earlier than any the
	// word was computed from. On an earlier reading, held while other calls
	// moved the key on, it would be judged at an earlier time, against counts
	// it could not yet hold: a spurious denial. A failed CAS reloads the word
	// but keeps the reading, so the clock (the slowest step) stays out of the
	// contended retry: an admission on a kept reading is sound (its estimate
	// at that reading is within limit; see cell, Stale clocks), and a denial
	// on it reads the clock again and decides again.
	//
	// The word is loaded again after the clock, as GCRA's is, so that the
	// clock is not in the window between the load and the CAS either, where
	// a concurrent write fails the CAS. If the word changed meanwhile, the
	// reading is kept as after a failed CAS. (An unchanged value is as good
	// as an unchanged word, even if writes landed and were undone in between,
	// a take's and a refund's say: the decision depends on the value only,
	// and the word held that value at the first load, before the reading, so
	// a denial on it is one decided on the first load.) On one hot key on two
	// cores of an Intel Xeon, timed against the mutex port in alternating
	// blocks (BenchmarkHotKeyRatio, eight alternations of the two builds),
	// admissions went from 1.91-2.19 times the mutex port's time at -cpu 2
	// to 1.01-1.29 (-cpu 4: 1.08-2.11 to 0.86-1.12; -cpu 8: 1.38-1.76 to
	// 0.85-1.15), with denials about the same.
	w := c.word.Load()
	cur, rem := packed.Window(l.clock(), l.window) // after Get and the load: see cell
	fresh := true                                  // the reading was taken after w was loaded
	if again := c.word.Load(); again != w {
		w, fresh = again, false
	}
	for {
		if w == dead {
			c = l.cells.Revive(key, c)
			w = c.word.Load()
			cur, rem = packed.Window(l.clock(), l.window)
			fresh = true
			continue
		}
		index, prev, count, behind := advance(w, cur)
		e := elapsed(rem, behind)
		if !l.fits(prev, count, e, 1) {
			if !fresh {
				cur, rem = packed.Window(l.clock(), l.window)
				fresh = true
				continue
			}
			return false, prev, count, e // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, pack(index, prev, count+1)) {
			return true, prev, count + 1, e
		}
		w, fresh = c.word.Load(), false
	}
}

// Take asks for n requests from key at once: all pass and are counted, or
// none is. Take(key, 0) reports the key's state without changing it; n greater
// than the limit or negative is denied with RetryAfter hotlimit.Never and
// changes nothing, not even inserting key. The package documentation defines
// the Decision's fields.
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
	c := l.cells.Load(key) // inlined, where Get is not
	if c == nil {
		c = l.cells.Get(key) // a miss: insert
	}
	if c == nil {
		return l.capped(), 0
	}
	need := uint64(n)
	// The CAS loop of Allow, for n requests at once. Invariant: a write
	// replaces the word read by its advance with n more in cur, only when that
	// word's estimate plus n is within limit; a concurrent write or a
	// tombstone (a Sweep's, or a Refund's that emptied both counts) fails the
	// CAS, and the call decides again (argued on cell).
	// The clock is read after the word, a failed CAS keeps the reading, and a
	// denial is decided on a reading taken after the word, as in Allow; the
	// word is loaded again after the clock, as in Allow.
	w := c.word.Load()
	now := l.clock()
	fresh := true // now was read after w was loaded
	if again := c.word.Load(); again != w {
		w, fresh = again, false
	}
	for {
		if w == dead {
			c = l.cells.Revive(key, c)
			w = c.word.Load()
			now, fresh = l.clock(), true
			continue
		}
		cur, rem := packed.Window(now, l.window)
		index, prev, count, behind := advance(w, cur)
		est := l.weigh(prev, elapsed(rem, behind)) + count
		if est+need > l.limit {
			if !fresh {
				now, fresh = l.clock(), true
				continue
			}
			d := l.decision(prev, count, est, rem, behind, now)
			d.RetryAfter = l.wait(prev, count, rem, behind, l.limit-need, now)
			return d, now
		}
		if c.word.CompareAndSwap(w, pack(index, prev, count+need)) {
			d := l.decision(prev, count+need, est+need, rem, behind, now)
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
// The clock is read between two loads of the word, and the report judges
// the word only when both loads saw it: it was the key's state at the
// reading. Every writer of the word read its clock before its CAS, so (with
// a clock that never decreases) the reading is in the word's window or a
// later one. Loaded only after the reading, a word that another call moved
// to a later window meanwhile would read as that window seen from behind,
// as after a clock step back: prev weighing in full, so a Remaining lower
// than the key had at any time of the call, and a ResetAfter that runs to
// the key's reset from the older reading, longer by the gap between the two
// readings. Loaded only before it, a word that another call counted on
// meanwhile would miss that count. While the loads differ, the report
// starts over from the lookup, since the write may be a sweep's kill or a
// refund's, after which the key lives in another cell: it retries only as
// often as writes land on the key inside its own clock readings. (A take
// and the refund that undoes it, both between the loads, leave the word as
// it was: the report judges it as if neither had landed.)
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
		if w == dead {
			w = fresh // evicted at the Load: its replacement, if any, is fresh
			break
		}
		if c.word.Load() == w {
			break
		}
	}
	cur, rem := packed.Window(now, l.window)
	_, prev, count, behind := advance(w, cur)
	d := l.decision(prev, count, l.weigh(prev, elapsed(rem, behind))+count, rem, behind, now)
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

// Sweep evicts every key whose state equals a fresh key's now: both counts
// would read zero, as its stored window is older than the previous one (a key
// whose counts a refund emptied was evicted by that refund; Sweep deletes it
// from the map). Such a key's next request starts from zero, as a new key's
// does. It returns how many keys it evicted. Sweep is safe to run
// concurrently with anything, Sweep included.
func (l *Limiter) Sweep() int {
	cur, _ := packed.Window(l.clock(), l.window)
	return l.cells.Sweep(func(c *cell) bool { return c.kill(cur) })
}
