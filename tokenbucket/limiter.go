package tokenbucket

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
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
	// MaxBurst is the largest burst (capacity).
	MaxBurst = 1 << 20
	// MaxBurstSpan bounds Burst·Window/Limit, the time a drained key takes to
	// refill (GCRA's bound too): it keeps the wrap guard's spans, which must
	// exceed four such times, inside the timestamp field.
	MaxBurstSpan = 366 * 24 * time.Hour
	// MinWindow is the shortest window.
	MinWindow = time.Millisecond
	// MaxWindow is the longest window.
	MaxWindow = 24 * time.Hour
)

const (
	// preciseRange is the span of time a layout with fractional token bits
	// must keep unambiguous; below it, New gives up the fraction (F = 0).
	preciseRange = 30 * 24 * time.Hour
	// minRange is the least span any accepted layout keeps unambiguous.
	minRange = time.Hour
	// maxTime caps the limiter's time, in nanoseconds since New: about 146
	// years, after which the limiter's time stands still. It keeps every
	// time and every sum of two times inside an int64.
	maxTime = 1 << 62
)

// Limiter is a token bucket per key: each key holds up to limit tokens,
// refilled continuously at limit per window; a request takes one token.
// Build it with New; see the package documentation for the model, the state
// word and its ranges. The zero Limiter is not usable, nor is a nil
// *Limiter: their methods panic, as methods on a nil pointer do (New checks
// the configuration, so that the decisions check nothing). It is safe for
// concurrent use.
type Limiter struct {
	cells *keyed.Map[cell]
	clock hotlimit.Clock
	mono  bool          // clock is hotlimit.Monotonic (no option set one): Allow calls it directly
	epoch int64         // clock() at New: time zero of the limiter
	stop  uint64        // the last time a clock reads, math.MaxInt64, since the epoch, capped at maxTime
	b     packed.Bucket // the layout of the state words
	fresh uint64        // a new key's word: b.Pack(b.Cap, 0), full
	unit  uint64        // one token in units: 2^F
	limit int
	burst int   // the capacity in tokens: Cap = burst·2^F
	fill  int64 // nanoseconds an empty bucket takes to fill: ⌈window·burst/limit⌉

	// The wrap guard (guard.go). swept is the time, in nanoseconds since
	// the epoch, at which the last sweep that ran to completion started; it
	// only grows, and only by CompareAndSwap in sweep.
	swept    atomic.Int64
	sweeping atomic.Bool // an asynchronous sweep is running
	soft     int64       // t − swept at which a caller starts a sweep in the background
	hard     int64       // t − swept at which a caller sweeps before reading any word
	back     int64       // swept − t beyond which a reading is raised: Range/4
	window   int64       // nanoseconds
	// floor is the latest s − back of a judged sweep started at s: an
	// admission from a full word raises an older reading to it. It only
	// grows, by CompareAndSwap in sweep.
	floor atomic.Int64

	// sweepLoaded, set only by tests before any use, runs in a sweep after
	// each Load of a word and before the sweep judges it, so that a test can
	// land a write in between.
	sweepLoaded func()
}

// bounds are the ranges New accepts, as burst.Bounds.
var bounds = burst.Bounds{MaxLimit: MaxLimit, MaxBurst: MaxBurst, MinWindow: MinWindow, MaxWindow: MaxWindow, MaxSpan: MaxBurstSpan}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a token bucket limiter: limit tokens per key, refilled at limit
// per window, or a capacity of hotlimit.WithBurst's value (0, the default:
// limit) refilled at the same rate. limit must lie in [1, MaxLimit],
// window in [MinWindow, MaxWindow], burst in [1, MaxBurst], and
// burst·window/limit, the time a drained key takes to refill, must not exceed
// MaxBurstSpan; otherwise New returns an error that names the field and its
// range and wraps hotlimit.ErrInvalidConfig. The limiter reads its clock once
// here: that reading is its epoch, and a later reading before it counts as
// the epoch.
func New(limit int, window time.Duration, opts ...hotlimit.Option) (*Limiter, error) {
	o := hotlimit.NewOptions(opts...)
	burst, err := bounds.Check("tokenbucket", limit, window, o.Burst)
	if err != nil {
		return nil, err
	}
	b, err := layoutFor(uint64(limit), uint64(burst), uint64(window))
	if err != nil {
		return nil, err
	}
	l := &Limiter{
		clock:  o.Clock,
		mono:   defaultClock(opts),
		b:      b,
		fresh:  b.Pack(b.Cap, 0),
		unit:   1 << b.FracBits,
		limit:  limit,
		burst:  burst,
		fill:   int64(b.Wait(b.Cap, 0)),
		window: int64(window),
	}
	l.soft, l.hard, l.back = guardSpans(b.Range(), uint64(l.fill), uint64(window), b.PerWindow)
	l.epoch = l.clock()
	l.stop = maxTime
	if l.epoch > 0 {
		l.stop = min(maxTime, uint64(math.MaxInt64-l.epoch))
	}
	l.cells = keyed.New(l.initCell, l.idle, o)
	return l, nil
}

// defaultClock reports whether opts leave the clock at hotlimit.Monotonic,
// the default: no option sets one (hotlimit.WithClock(nil) sets none).
func defaultClock(opts []hotlimit.Option) bool {
	var o hotlimit.Options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.Clock == nil
}

// fillTime returns ⌈Window·Cap/PerWindow⌉, the nanoseconds an empty bucket of
// layout b takes to fill from any clock reading, or false when it does not
// fit 64 bits.
func fillTime(b packed.Bucket) (uint64, bool) {
	if hi, _ := bits.Mul64(b.Cap, b.Window); hi >= b.PerWindow {
		return 0, false
	}
	return b.Wait(b.Cap, 0), true
}

// layoutFor chooses the layout for a capacity of burst tokens refilled at
// limit per window nanoseconds: the largest F in [0, packed.MaxFracBits]
// whose timestamp keeps at least 30 days and 4 fill times (fillTime; a window
// when burst = limit) unambiguous; failing that F = 0, if it keeps at least an
// hour and 4 fill times; failing that an error. (Within New's ranges the last
// case never happens: 1<<20 per 1 ms, the fastest rate, keeps 69 minutes, and
// a fill time of at most MaxBurstSpan needs 4 of them, far below the 2^42
// units of time a 43-bit timestamp keeps at F = 0.)
func layoutFor(limit, burst, window uint64) (packed.Bucket, error) {
	fits := func(b packed.Bucket, least uint64) bool {
		fill, ok := fillTime(b)
		r := b.Range()
		return ok && r >= least && r/4 >= fill
	}
	for f := packed.MaxFracBits; f >= 0; f-- {
		if b := packed.NewBucket(limit, burst, window, uint(f)); fits(b, uint64(preciseRange)) {
			return b, nil
		}
	}
	b := packed.NewBucket(limit, burst, window, 0)
	if fits(b, uint64(minRange)) {
		return b, nil
	}
	if burst != limit {
		return packed.Bucket{}, fmt.Errorf("tokenbucket: burst %d of limit %d per window %v is out of range: "+
			"a key's %d-bit timestamp spans only %v at that rate, and must span at least %v and 4 refills of the burst: %w",
			burst, limit, time.Duration(window), b.TickBits, time.Duration(b.Range()), minRange, hotlimit.ErrInvalidConfig)
	}
	// Range is ⌊2^(T−1)·window/limit⌋ at F = 0, and T depends on limit only.
	span := uint64(1) << (b.TickBits - 1)
	minWindow := (uint64(minRange)*limit + span - 1) / span
	return packed.Bucket{}, fmt.Errorf(
		"tokenbucket: limit %d per window %v is out of range: a key's %d-bit timestamp spans only %v at that rate, "+
			"and must span at least %v and 4 windows; for limit %d the window must be at least %v: %w",
		limit, time.Duration(window), b.TickBits, time.Duration(b.Range()), minRange, limit,
		time.Duration(minWindow), hotlimit.ErrInvalidConfig)
}

// Allow reports whether one request from key passes, and takes a token if
// so. It is Take(key, 1).Allowed, without building the Decision.
func (l *Limiter) Allow(key string) bool {
	ok, _ := l.admit(key)
	return ok
}

// admit is Allow, reporting also the tokens (in units) the bucket holds after
// the decision: 0 when a key cap turned a new key away.
func (l *Limiter) admit(key string) (allowed bool, tokens uint64) {
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return false, 0 // hotlimit.WithMaxKeys: no room for a new key
	}
	var reading int64
	if l.mono {
		reading = hotlimit.Monotonic() // l.clock() itself, called directly
	} else {
		reading = l.clock()
	}
	t, gen, ok := l.fastRead(reading) // after the map lookup: see cell
	c := f.Cell(key)
	if c == nil || !ok {
		if c == nil {
			// Another key's node (see keyed.Found): look key up in
			// full, then read the clock after it.
			if c = l.cells.Get(key); c == nil {
				return false, 0
			}
		}
		t, gen, _ = l.read()
	}
	now, _ := l.b.Units(t)
	// The CAS loop, argued in full on cell: the new word is a function of
	// the word read and now only, so the CAS makes read, decide and write one
	// step; a concurrent write fails it and the loop decides again. A
	// denial writes nothing and takes effect at the Load. A tombstone sends
	// the call to the key's fresh cell, and a new wrap-guard generation to a
	// fresh clock reading; both re-read the clock.
	//
	// A denial is never decided on a reading behind the timestamp of the
	// word it judges (Refill kept that later last): another call wrote the
	// word after this one read the clock, and judged at the older reading,
	// which refills nothing, the key would look emptier than it is now (a
	// spurious denial). Such a denial reads the clock again and decides
	// again on the word loaded after that reading; only when that word is
	// the one it read again for (the clock really is behind the word) does
	// it deny. Each further reading follows a write that landed since the
	// last one: another call's progress.
	judged := packed.BucketDead // the word the clock was last read again for
	for {
		w := c.word.Load()
		tokens, last := l.b.Unpack(w)
		var floor int64
		if tokens >= l.b.Cap {
			floor = l.floor.Load() // after the Load, before the check of swept: see guard.go
		}
		if w == packed.BucketDead || l.swept.Load() != gen {
			if w == packed.BucketDead {
				c = l.cells.Revive(key, c)
			}
			t, gen, _ = l.read()
			now, _ = l.b.Units(t)
			continue
		}
		if int64(t) < floor {
			t = uint64(floor) // a time already passed, as in guard
			now, _ = l.b.Units(t)
		}
		tokens, last = l.b.Refill(tokens, last, now)
		if tokens < l.unit {
			if last != now&(1<<l.b.TickBits-1) && w != judged {
				judged = w // a write after the reading: read again
				t, gen, _ = l.read()
				now, _ = l.b.Units(t)
				continue
			}
			return false, tokens
		}
		if c.word.CompareAndSwap(w, l.b.Pack(tokens-l.unit, last)) {
			return true, tokens - l.unit
		}
	}
}

// Take asks for n tokens from key at once: all are taken, or none is.
// Take(key, 0) reports the key's state without changing it; n greater than
// the burst or negative is denied with RetryAfter hotlimit.Never and changes
// nothing. The package documentation defines the Decision's fields.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.take(key, n)
	return d
}

// TakeReceipt is Take, plus the receipt of what it took: n tokens at the
// time of the call (see hotlimit.Receipt), or the zero Receipt when denied or
// n < 1. Give them back with Refund.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, t := l.take(key, n)
	if !d.Allowed || n < 1 {
		return d, hotlimit.Receipt{}
	}
	return d, hotlimit.Receipt{N: n, At: l.at(t)}
}

// take is Take, which also returns the limiter's time t of the decision.
func (l *Limiter) take(key string, n int) (hotlimit.Decision, uint64) {
	if n < 1 || n > l.burst {
		return l.report(key, n), 0
	}
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return l.capped(), 0
	}
	t, gen, lag := l.read() // after the map lookup: see cell
	c := f.Cell(key)
	if c == nil {
		// Another key's node (see keyed.Found): look key up in full,
		// then read the clock after it.
		if c = l.cells.Get(key); c == nil {
			return l.capped(), 0
		}
		t, gen, lag = l.read()
	}
	now, rem := l.b.Units(t)
	need := uint64(n) << l.b.FracBits
	// The CAS loop of Allow, for n tokens at once; argued on cell. A denial
	// on a reading behind the word's timestamp reads the clock again, as in
	// Allow.
	judged := packed.BucketDead // the word the clock was last read again for
	for {
		w := c.word.Load()
		tokens, last := l.b.Unpack(w)
		var floor int64
		if tokens >= l.b.Cap {
			floor = l.floor.Load() // after the Load, before the check of swept: see guard.go
		}
		if w == packed.BucketDead || l.swept.Load() != gen {
			if w == packed.BucketDead {
				c = l.cells.Revive(key, c)
			}
			t, gen, lag = l.read()
			now, rem = l.b.Units(t)
			continue
		}
		if int64(t) < floor {
			t, lag = uint64(floor), 0 // a time already passed, as in guard
			now, rem = l.b.Units(t)
		}
		tokens, last = l.b.Refill(tokens, last, now)
		if tokens < need {
			if last != now&(1<<l.b.TickBits-1) && w != judged {
				judged = w // a write after the reading: read again
				t, gen, lag = l.read()
				now, rem = l.b.Units(t)
				continue
			}
			d := l.decision(tokens, last, t, now, rem, lag)
			d.RetryAfter = l.wait(need-tokens, last, t, now, rem, lag)
			return d, 0
		}
		if c.word.CompareAndSwap(w, l.b.Pack(tokens-need, last)) {
			d := l.decision(tokens-need, last, t, now, rem, lag)
			d.Allowed = true
			return d, t
		}
	}
}

// report is Take for n == 0, n > burst and n < 0: it reads key's state and
// changes nothing, not even inserting key. A missing key reports as fresh,
// and so does a dead cell (a sweep killed it full, or a refund that would
// have filled it, and it is yet to be deleted): the key's next cell is
// fresh, and a fresh key reads the same at any time. It waits for no one: it
// reads the clock again only when a write landed on the key's word between
// its two loads of it, or a sweep completed between its two loads of the
// generation, before the word and after the clock reading (see guard.go);
// either is another call's progress.
//
// The clock is read between two loads of the word, and the report judges
// the word only when both loads saw it: it was the key's state at the
// reading. Every writer of the word read its clock before its CAS, so (with
// a clock that never goes back) the reading is no earlier than the time the
// word was refilled to. Loaded only after the reading, a word that another
// call moved on meanwhile would have its timestamp ahead of the reading, as
// after a clock step back: the same tokens, but a ResetAfter longer by the
// gap than the key ever had. Loaded only before it, a word that another
// call moved on meanwhile would be refilled up to the reading as if no one
// had taken: more tokens and a shorter ResetAfter than the key had. While
// the loads differ (a write landed between them), the report starts over
// from the lookup, since the write may be a sweep's kill or a refund's,
// after which the key lives in another cell: it retries only as often as
// writes land on the key inside its own clock readings. (A word that comes
// back between the loads, a take and a refund that restores it, is the
// key's whole state: the report judges the state the key had after both,
// the same as before them.)
//
// The wrap guard still needs the word read under the generation the reading
// is checked against, with swept unchanged across the loads: the generation
// is loaded before the first load, and read loads it again after the clock
// reading; while the two differ (a sweep completed meanwhile), the report
// starts over.
func (l *Limiter) report(key string, n int) hotlimit.Decision {
	var w uint64
	var t, lag uint64
	for {
		c, held := l.cells.Peek(key)
		if !held {
			w = l.fresh
			t, _, lag = l.read()
			break
		}
		gen := l.swept.Load()
		w = c.word.Load()
		var g int64
		t, g, lag = l.read()
		if w == packed.BucketDead {
			w = l.fresh // killed at the Load: the key's next cell is fresh
			break
		}
		if g == gen && c.word.Load() == w {
			break
		}
	}
	now, rem := l.b.Units(t)
	tokens, last := l.b.Unpack(w)
	tokens, last = l.b.Refill(tokens, last, now)
	d := l.decision(tokens, last, t, now, rem, lag)
	if n == 0 {
		d.Allowed = true
	} else {
		d.RetryAfter = hotlimit.Never
	}
	return d
}

// Burst returns the most requests one Take passes at once: the bucket's
// capacity, the burst (the limit unless hotlimit.WithBurst set it); see
// hotlimit.Burster.
func (l *Limiter) Burst() int { return l.burst }

// Len returns the number of keys held. While keys are inserted or deleted,
// it counts them one stripe of counters at a time, so it can be off by the
// insertions and deletions made during the call.
func (l *Limiter) Len() int {
	return l.cells.Len()
}

// Sweep evicts every key whose bucket is full at the clock's current time,
// and returns how many it evicted: a full bucket is what a new key gets, so
// with a clock that never goes back, evicting it changes no decision. A key
// idle for its fill time, Burst·Window/Limit (a window when Burst is the
// limit), is full. Sweep is safe to run concurrently with anything,
// Sweep included.
func (l *Limiter) Sweep() int {
	// A pass stops judging when another sweep records a newer generation
	// during it (guard.go): a sweep that started earlier, perhaps while keys
	// full now were still in use. Then a new pass, at the clock's time
	// again, judges every key under the new generation. Each retry follows
	// a sweep that completed, so Sweep waits for no one.
	evicted := 0
	for {
		t, _ := l.time()
		n, complete := l.sweepPass(t)
		evicted += n
		if complete {
			return evicted
		}
	}
}

// read returns the limiter's time t (see time), how far the clock is behind
// the epoch (zero unless the clock reads before it), and the wrap-guard
// generation gen under which the caller may read words; see guard.
func (l *Limiter) read() (t uint64, gen int64, lag uint64) {
	t, lag = l.time()
	gen = l.swept.Load()
	if d := int64(t) - gen; d >= l.soft || d < -l.back {
		var g uint64
		if g, gen = l.guard(t, gen); g != t {
			t, lag = g, 0
		}
	}
	return t, gen, lag
}

// fastRead is read's common case, small enough to be inlined into Allow:
// for a clock reading now at or after the epoch and before maxTime, it
// returns the limiter's time t and the generation gen, loaded after the
// reading as in read, and ok when t lies inside gen's guard spans (no sweep
// due, not behind), where read would return the same. Otherwise the caller
// calls read, which reads the clock again.
func (l *Limiter) fastRead(now int64) (t uint64, gen int64, ok bool) {
	gen = l.swept.Load()
	t = uint64(now) - uint64(l.epoch)
	d := int64(t) - gen
	return t, gen, now >= l.epoch && t <= maxTime && d < l.soft && d >= -l.back
}

// time reads the clock: t is the nanoseconds since the epoch, clamped to
// [0, maxTime]; lag is how far a clock reading before the epoch is behind it.
func (l *Limiter) time() (t, lag uint64) {
	now := l.clock()
	if now < l.epoch {
		return 0, uint64(l.epoch) - uint64(now)
	}
	return min(uint64(now)-uint64(l.epoch), maxTime), 0
}

// decision reports a bucket refilled to tokens (units) at now (units, the
// limiter's time t), whose stored timestamp is last, when the clock is rem
// into its unit and lag behind the epoch. Allowed and RetryAfter are left for
// the caller.
func (l *Limiter) decision(tokens, last, t, now, rem, lag uint64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: l.limit, Remaining: int(tokens >> l.b.FracBits)}
	if tokens < l.b.Cap {
		d.ResetAfter = l.wait(l.b.Cap-tokens, last, t, now, rem, lag)
	}
	return d
}

// wait returns the exact time until a bucket refilled to some tokens at now
// (units, the limiter's time t) holds need units more, with nothing taken
// meanwhile: the least d such that the same call d nanoseconds later sees
// them. A bucket whose timestamp last is ahead of now (the clock stepped
// back) refills nothing until the clock reaches last again, and a clock
// behind the epoch first reaches the epoch, lag later. It saturates at
// hotlimit.Never, as every duration of the package does, when the limiter's
// time stops (maxTime) before the refill or the clock does (a refill after
// math.MaxInt64, a reading no clock makes: stop), or when the wait exceeds
// math.MaxInt64 nanoseconds (a clock more than about 292 years behind the
// epoch). need is at most Cap and last − now less than 2^(T−1), so the
// refill itself takes at most the fill time plus Range: it fits 64 bits.
func (l *Limiter) wait(need, last, t, now, rem, lag uint64) time.Duration {
	ahead := (last - now) & (1<<l.b.TickBits - 1) // 0 unless Refill kept a later last
	d := l.b.Wait(ahead+need, rem)
	if d > l.stop-t { // t ≤ stop, as a reading is at most math.MaxInt64
		return hotlimit.Never
	}
	if lag > math.MaxInt64-d { // d ≤ maxTime < math.MaxInt64: no wrap
		return hotlimit.Never
	}
	return time.Duration(d + lag)
}
