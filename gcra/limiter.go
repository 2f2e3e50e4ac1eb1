package gcra

import (
	"math"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// The ranges New accepts.
const (
	// MaxLimit is the largest limit.
	MaxLimit = 1 << 20
	// MaxBurst is the largest burst.
	MaxBurst = 1 << 20
	// MinWindow is the shortest window.
	MinWindow = time.Millisecond
	// MaxWindow is the longest window.
	MaxWindow = 24 * time.Hour
	// MaxBurstSpan bounds Burst·Window/Limit, the time a drained key takes to
	// refill: it keeps a key's theoretical arrival time within reach of the
	// clock (see the package documentation).
	MaxBurstSpan = 366 * 24 * time.Hour
	// MaxScale bounds the exact tick: a limiter whose Limit/gcd(Window,
	// Limit) is at most MaxScale counts time in ticks of gcd/Limit ns and is
	// exact; any other counts in ticks of 1/2^F of Window/Limit (see the
	// package documentation).
	MaxScale = 16
	// MaxFracBits bounds F, the fractional bits of a token in a tick.
	MaxFracBits = 32
	// MinTime is the least time a limiter keeps counting after its epoch,
	// in nanoseconds (2^58 ns, over 9 years), unless the clock's last
	// reading, math.MaxInt64, comes sooner; see the package documentation.
	MinTime = 1 << 58
)

// Limiter is a GCRA limiter per key: each key may pass Burst requests at
// once and is refilled continuously at Limit per Window. Build it with New;
// see the package documentation for the model, the state word and its
// ranges. The zero Limiter is not usable, nor is a nil *Limiter: their
// methods panic, as methods on a nil pointer do (New checks the
// configuration, so that the decisions check nothing). It is safe for
// concurrent use.
type Limiter struct {
	cells   *keyed.Map[cell]
	clock   hotlimit.Clock
	epoch   int64        // clock() at New: time zero of the limiter
	num     uint64       // the limiter's clock runs at num/den ticks per nanosecond
	den     uint64       // (see tickFor)
	tick    packed.Scale // num/den, for ticks
	tsc     uint64       // the emission interval T, in ticks
	span    uint64       // burst·T in ticks: how far a TAT may run ahead of now
	tau     uint64       // span − T: the tolerance of GCRA, in ticks
	maxTime uint64       // the limiter's time stops here, nanoseconds since the epoch
	limit   int
	burst   uint64
}

// bounds are the ranges New accepts, as burst.Bounds.
var bounds = burst.Bounds{MaxLimit: MaxLimit, MaxBurst: MaxBurst, MinWindow: MinWindow, MaxWindow: MaxWindow, MaxSpan: MaxBurstSpan}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a GCRA limiter of limit requests per window per key, with a
// burst of hotlimit.WithBurst's value (0, the default: limit).
// limit must lie in [1, MaxLimit], window in [MinWindow, MaxWindow], burst
// in [1, MaxBurst], and burst·window/limit must not exceed MaxBurstSpan;
// otherwise New returns an error that names the field and its range and
// wraps hotlimit.ErrInvalidConfig. The limiter reads its clock once here:
// that reading is its epoch, and a later reading before it counts as the
// epoch.
func New(limit int, window time.Duration, opts ...hotlimit.Option) (*Limiter, error) {
	o := hotlimit.NewOptions(opts...)
	burst, err := bounds.Check("gcra", limit, window, o.Burst)
	if err != nil {
		return nil, err
	}
	num, den, tsc := tickFor(uint64(limit), uint64(window), uint64(burst))
	// span < 2^59: exact ticks, burst·window/g ≤ MaxBurstSpan·MaxScale; fine
	// ticks, burst·2^F with maxTimeFor(span) ≥ MinTime.
	span := uint64(burst) * tsc
	l := &Limiter{
		clock:   o.Clock,
		num:     num,
		den:     den,
		tick:    packed.NewScale(num, den),
		tsc:     tsc,
		span:    span,
		tau:     span - tsc,
		maxTime: maxTimeFor(num, den, span),
		limit:   limit,
		burst:   uint64(burst),
	}
	l.epoch = l.clock()
	if l.epoch > 0 {
		// No clock reads past math.MaxInt64: a wait that would end later
		// never ends (wait says Never).
		l.maxTime = min(l.maxTime, uint64(math.MaxInt64-l.epoch))
	}
	l.cells = keyed.New(nil, l.idle, o)
	return l, nil
}

// Allow reports whether one request from key passes, and counts it if so. It
// is Take(key, 1).Allowed, without building the Decision.
func (l *Limiter) Allow(key string) bool {
	ok, _, _ := l.admit(key)
	return ok
}

// admit is Allow, reporting also the TAT the decision leaves and the clock
// reading it was made at: tat = s + span when a key cap turned a new key
// away, which reads as no room.
func (l *Limiter) admit(key string) (allowed bool, tat, s uint64) {
	c := l.cells.Load(key) // inlined, where Get is not
	if c == nil {
		c = l.cells.Get(key) // a miss: insert
	}
	if c == nil {
		s, _, _ = l.now()
		return false, s + l.span, s // hotlimit.WithMaxKeys: no room for a new key
	}
	// CAS loop, argued in full on cell. Invariant: the word is the key's TAT
	// after the admissions whose CAS succeeded, in CAS order, less what
	// refunds gave back; an admission only raises it.
	// The new word is a function of the word read and s only, so the CAS
	// makes read, decide and write one step; a concurrent writer changed the
	// word, fails the CAS, and the loop decides again from its value. A
	// denial writes nothing. A Sweep's tombstone sends the call to the key's
	// fresh cell.
	//
	// The clock is read after the word (and so after Get: see cell), and a
	// denial is only ever decided on a reading taken after the word it
	// judges: every writer of the word read its clock before its CAS, so such
	// a reading is no earlier than any time the word was computed from. On an
	// earlier reading, held while other calls moved the TAT on, the key would
	// be judged at a time before theirs, where it looks emptier: a spurious
	// denial. A failed CAS reloads the word but keeps the reading, so the
	// clock (the slowest step) stays out of the contended retry: an
	// admission on a kept reading is sound (it raises the TAT by exactly T
	// from at least the stored value; see cell, Order of clock readings), and
	// a denial on it reads the clock again and decides again.
	//
	// The word is loaded again after the clock, so that the clock is not in
	// the window between the load and the CAS either, where a concurrent
	// write fails the CAS. On one hot key on two cores, counted per P: 1.25
	// to 1.41 CAS attempts per admission without the second load, 1.12 to
	// 1.16 with it, and admissions 13 to 17% faster (the median per-block
	// ratio, the two timed in alternating blocks in one process). If the
	// word changed meanwhile, the reading is kept as after a failed CAS. (An
	// unchanged value is as good as an unchanged word: the decision depends
	// on the value only.)
	//
	// The clock is not read first, before the node (as tokenbucket does,
	// whose word holds its writer's reading): the TAT would show a reading
	// taken before it to be no earlier than its writers' only when s ≥
	// TAT − T (an admission raises the TAT to its reading plus T at least),
	// and a denial needs TAT − s > τ = (Burst − 1)·T: for any burst above 1
	// the two never meet, and every denial would read the clock again.
	w := c.word.Load()
	s, _, _ = l.now()
	fresh := true // s was read after w was loaded
	if again := c.word.Load(); again != w {
		w, fresh = again, false
	}
	for {
		if w == dead {
			c = l.cells.Revive(key, c)
			w = c.word.Load()
			s, _, _ = l.now()
			fresh = true
			continue
		}
		base := max(w, s)
		if base-s > l.tau {
			if !fresh {
				s, _, _ = l.now()
				fresh = true
				continue
			}
			return false, w, s // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, base+l.tsc) {
			return true, base + l.tsc, s
		}
		w, fresh = c.word.Load(), false
	}
}

// Take asks for n requests from key at once: all pass and are counted, or
// none is. Take(key, 0) reports the key's state without changing it; n greater
// than the burst or negative is denied with RetryAfter hotlimit.Never and
// changes nothing. The package documentation defines the Decision's fields.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.take(key, n)
	return d
}

// TakeReceipt is Take, plus the receipt of what it took: n requests at the
// time of the call (see hotlimit.Receipt), or the zero Receipt when denied or
// n < 1. Give them back with Refund.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, ns := l.take(key, n)
	if !d.Allowed || n < 1 {
		return d, hotlimit.Receipt{}
	}
	return d, hotlimit.Receipt{N: n, At: l.at(ns)}
}

// take is Take, which also returns the clock reading of the decision, in
// nanoseconds since the epoch (clamped as now clamps it).
func (l *Limiter) take(key string, n int) (hotlimit.Decision, uint64) {
	if n < 1 || uint64(n) > l.burst {
		return l.report(key, n), 0
	}
	c := l.cells.Load(key) // inlined, where Get is not
	if c == nil {
		c = l.cells.Get(key) // a miss: insert
	}
	if c == nil {
		return l.capped(), 0
	}
	need := uint64(n) * l.tsc
	// The CAS loop of Allow, for n requests at once; the same invariant,
	// argued on cell: an admission raises the word, by CAS from the value
	// this call decided on, to at most s + span. The clock is read after the word, a
	// failed CAS keeps the reading, and a denial is decided on a reading
	// taken after the word, as in Allow; the word is loaded again after the
	// clock, as in Allow.
	w := c.word.Load()
	s, ns, lag := l.now()
	fresh := true // s was read after w was loaded
	if again := c.word.Load(); again != w {
		w, fresh = again, false
	}
	for {
		if w == dead {
			c = l.cells.Revive(key, c)
			w = c.word.Load()
			s, ns, lag = l.now()
			fresh = true
			continue
		}
		next := max(w, s) + need
		if next-s > l.span {
			if !fresh {
				s, ns, lag = l.now()
				fresh = true
				continue
			}
			// Denied, so w > s (n ≤ burst): the request passes once the
			// limiter's time reaches w + need − span.
			d := l.decision(w, s, ns, lag)
			d.RetryAfter = l.wait(next-l.span, ns, lag)
			return d, 0
		}
		if c.word.CompareAndSwap(w, next) {
			d := l.decision(next, s, ns, lag)
			d.Allowed = true
			return d, ns
		}
		w, fresh = c.word.Load(), false
	}
}

// report is Take for n == 0, n > burst and n < 0: it reads key's state and
// changes nothing, not even inserting key. A missing key reports as fresh.
//
// The clock is read between two loads of the word, and the report judges
// the word only when both loads saw it: it was the key's state at the
// reading. Every writer of the word read its clock before its CAS, so the
// reading is no earlier than any time the word was computed from. Loaded
// only after the reading, a word that another call moved on meanwhile would
// read as emptier by the gap, as after a clock step back: fewer tokens and
// a later ResetAfter than the key ever had. Loaded only before it, a word
// that another call moved on meanwhile would be refilled up to the reading
// as if no one had taken. While the loads differ, the report starts over
// from the lookup, since the write may be a sweep's kill, after which the
// key lives in another cell: it retries only as often as writes land on
// the key inside its own clock readings. (A take and the refund that undoes it,
// both between the loads, leave the word as it was: the report judges it
// as if neither had landed.)
func (l *Limiter) report(key string, n int) hotlimit.Decision {
	var w uint64
	var s, ns, lag uint64
	for {
		c, held := l.cells.Peek(key)
		if !held {
			w = fresh
			s, ns, lag = l.now()
			break
		}
		w = c.word.Load()
		s, ns, lag = l.now()
		if w == dead {
			w = fresh // evicted at the Load: its replacement, if any, is fresh
			break
		}
		if c.word.Load() == w {
			break
		}
	}
	d := l.decision(w, s, ns, lag)
	if n == 0 {
		d.Allowed = true
	} else {
		d.RetryAfter = hotlimit.Never
	}
	return d
}

// Burst returns the most requests one Take passes at once: the burst (the
// limit unless hotlimit.WithBurst set it); see hotlimit.Burster.
func (l *Limiter) Burst() int { return int(l.burst) }

// Len returns the number of keys held. While keys are inserted or deleted,
// it counts them one stripe of counters at a time, so it can be off by the
// insertions and deletions made during the call.
func (l *Limiter) Len() int {
	return l.cells.Len()
}

// Sweep evicts every key that is full at the clock's current time (its TAT
// is not after now) and returns how many it evicted. A full key is what a new
// key is, so with a clock that never goes back, evicting it changes no
// decision. A key idle for burst·Window/Limit is full. Sweep is safe to run
// concurrently with anything, Sweep included.
func (l *Limiter) Sweep() int {
	s, _, _ := l.now()
	return l.cells.Sweep(func(c *cell) bool { return c.kill(s) })
}
