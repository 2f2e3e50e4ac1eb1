package slidinglog

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// The ranges New accepts.
const (
	// MaxLimit is the largest limit, 65536. A key's ring costs 8 bytes per
	// unit of limit, so 512 KiB per key at MaxLimit.
	MaxLimit = 1 << 16
	// MinWindow is the shortest window.
	MinWindow = time.Millisecond
	// MaxWindow is the longest window, 366 days.
	MaxWindow = 366 * 24 * time.Hour
)

// Limiter admits a request from a key when fewer than its limit passed in
// the window before it; see the package documentation for the model. Build
// it with New. The zero Limiter is not usable, nor is a nil *Limiter: their
// methods panic, as methods on a nil pointer do (New checks the
// configuration, so that the decisions check nothing). It is safe for
// concurrent use.
type Limiter struct {
	cells  *keyed.Map[cell]
	clock  hotlimit.Clock
	epoch  int64 // clock() at New: time zero of the limiter's times
	limit  uint64
	window int64 // nanoseconds, in [MinWindow, MaxWindow]
	minNow int64 // packed.MinStamp + window: the earliest time a call uses
	// The clock readings at minNow and packed.MaxStamp, saturated to the
	// int64 range: now clamps a reading between them before it subtracts
	// epoch, which then cannot overflow.
	lo, hi int64
	// last is hi − epoch, the latest time the limiter reads: packed.MaxStamp,
	// or less when the clock's range (math.MaxInt64) ends first.
	last int64
	// markHook, when set (by tests), runs in Refund between the load of a
	// slot it is about to mark and the CAS that marks it.
	markHook func()
}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a limiter that admits limit requests per key in any window of
// the given length. limit must lie in [1, MaxLimit] and window in
// [MinWindow, MaxWindow]; otherwise New returns an error that names the field
// and its range and wraps hotlimit.ErrInvalidConfig. The limiter reads its
// clock once here: that reading is its epoch, and it counts time from there,
// for about 73 years either side (see the package documentation), whatever
// the clock's origin.
func New(limit int, window time.Duration, opts ...hotlimit.Option) (*Limiter, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("slidinglog: limit %d out of range [1, %d]: %w", limit, MaxLimit, hotlimit.ErrInvalidConfig)
	}
	if window < MinWindow || window > MaxWindow {
		return nil, fmt.Errorf("slidinglog: window %v out of range [%v, %v]: %w", window, MinWindow, MaxWindow, hotlimit.ErrInvalidConfig)
	}
	o := hotlimit.NewOptions(opts...)
	if err := o.RejectBurst("slidinglog", limit); err != nil {
		return nil, err
	}
	l := &Limiter{
		clock:  o.Clock,
		limit:  uint64(limit),
		window: int64(window),
		minNow: packed.MinStamp + int64(window),
	}
	l.epoch = l.clock()
	l.lo, l.hi = l.clockAt(l.minNow), l.clockAt(packed.MaxStamp)
	l.last = l.hi - l.epoch // hi ≥ epoch: no overflow
	initCell := func(c *cell) { c.slots = make([]atomic.Int64, limit) }
	l.cells = keyed.New(initCell, l.idle, o)
	return l, nil
}

// now reads the clock as the limiter's time: nanoseconds since the epoch,
// clamped to [minNow, packed.MaxStamp] so that every logged time packs into
// a slot, a fresh slot is always expired, and every difference of two times
// fits an int64.
func (l *Limiter) now() int64 {
	return l.clamp(l.clock())
}

// clamp returns the limiter's time at the clock reading c, as now reads it:
// min(max(since(c), minNow), packed.MaxStamp), computed in the clock's
// terms. lo and hi are that range's bounds read on the clock, saturated;
// a c between them lies within the int64 range of epoch, so c − epoch
// does not overflow, and a bound that saturated is one no reading passes,
// whose side of the range since would not have clamped either. (This
// keeps now small enough for the compiler to inline.)
func (l *Limiter) clamp(c int64) int64 {
	return min(max(c, l.lo), l.hi) - l.epoch
}

// since returns c − epoch, saturated to the int64 range: a reading and the
// epoch can lie up to 2^64 − 1 ns apart, and a saturated difference still
// lies beyond the range clamp keeps.
func (l *Limiter) since(c int64) int64 {
	d := c - l.epoch
	if (c < l.epoch) != (d < 0) { // overflowed: the sign tells which way
		if c < l.epoch {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return d
}

// clockAt returns the clock reading at the limiter's time t: epoch + t,
// saturated to the int64 range (a time past every reading of the clock,
// reached by the 1 ns bumps, reads as the latest).
func (l *Limiter) clockAt(t int64) int64 {
	c := l.epoch + t
	if (t < 0) != (c < l.epoch) { // overflowed: the sign of t tells which way
		if t < 0 {
			return math.MinInt64
		}
		return math.MaxInt64
	}
	return c
}

// Allow reports whether one request from key passes, and logs it if so. It
// is Take(key, 1).Allowed, without building the Decision.
func (l *Limiter) Allow(key string) bool {
	ok, _ := l.admit(key, false)
	return ok
}

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass right now, after this
// one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter: for callers that classify decisions by their remaining share,
// as a service's observer does. Remaining costs a count of the log, as in
// Take: most often four probes around where the last count ended.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	allowed, free := l.admit(key, true)
	return allowed, int(free)
}

// admit is Allow, reporting also, when remaining is set, the requests that
// would pass after the decision: 0 when a key cap turned a new key away.
// Counted between the read of the slot of claim h and the claim's CAS, as
// take counts it: see the argument there. A denial reports 0: see free.
func (l *Limiter) admit(key string, remaining bool) (allowed bool, free uint64) {
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return false, 0 // hotlimit.WithMaxKeys: no room for a new key
	}
	now := l.now() // after Find: see kill
	c := f.Cell(key)
	if c == nil {
		// Another key's node (see keyed.Found): look key up in full,
		// then read the clock after it.
		if c = l.cells.Get(key); c == nil {
			return false, 0
		}
		now = l.now()
	}
	// One claim, as argued on cell: decide on the oldest of the last L
	// requests, claim h − L in the slot of h, the first claim that has not
	// landed; log by CAS on that very slot, which succeeds only if no other
	// claim or tombstone landed there since the read (a slot never holds a
	// value twice), and only replaces a time expired at the new one, so each
	// slot's admitted times grow by Window or more.
	L := uint64(len(c.slots))
	D, A := maxLag(L), advanceAt(L)
	for {
		// cell.read, inlined by hand (read is too large for the inliner,
		// and the snapshot it returns is copied through the stack, which
		// cost about a fifth of an admission): from head h0, skip the
		// slots of the claims that landed past it, to claim h, in slot i,
		// holding v; nv is the stamp of claim h − 1, from the last slot
		// skipped, or from slot (h − 1) mod L when none was (slot i itself
		// when L = 1). At h = 0 and L > 1 that slot, L − 1, was never
		// claimed (only claim L − 1 writes a time there; a refund only
		// sets a bit, a tombstone lands on the slot of the next claim), so
		// its time is packed.MinStamp, as read says. Read after slot i,
		// that slot can hold a later claim, or a tombstone, when claims
		// from h on landed in between (see cell); read checks for it,
		// admit need not: the CAS on slot i then fails, and a denial at
		// the later time max(now, newest) is one at the earlier too (an
		// entry only leaves the window as time goes on).
		h0 := c.head.Load()
		h, i, round := h0, h0%L, h0/L
		v := c.load(i)
		nv := v
		for v != packed.StampDead {
			if _, parity := packed.UnpackStamp(v); parity != round&1 {
				break // claim h − L: claim h has not landed
			}
			nv = v // claim h landed: the newest so far
			h++
			if i++; i == L {
				i, round = 0, round+1
			}
			if h-h0 >= D {
				break
			}
			v = c.load(i)
		}
		if h-h0 >= D {
			c.head.CompareAndSwap(h0, h) // see read: too far past the head
			continue
		}
		if h == h0 && L > 1 {
			j := i - 1
			if i == 0 {
				j = L - 1
			}
			nv = c.load(j)
		}
		if c.head.Load() > h {
			continue // the head moved past h: the slots read may be later rounds'
		}
		if v == packed.StampDead {
			c = l.cells.Revive(key, c)
			now = l.now()
			L = uint64(len(c.slots))
			D, A = maxLag(L), advanceAt(L)
			continue
		}
		newest, _ := packed.UnpackStamp(nv)
		t, ok := claimable(v, max(now, newest), l.window)
		if !ok {
			return false, 0 // a denial writes nothing; see free
		}
		if remaining {
			free = c.freeFrom(h, i, L, t-l.window) // checked by the CAS below
		}
		if c.cas(i, v, packed.PackStamp(t, round)) {
			if h+1-h0 >= A {
				c.head.CompareAndSwap(h0, h+1) // see cell.landed
			}
			return true, free - min(free, 1) // free ≥ 1: slot i was free at t
		}
	}
}

// Take asks for n requests from key at once: all pass and are logged, or none
// is. Take(key, 0) reports the key's state without changing it; n greater than
// the limit or negative is denied with RetryAfter hotlimit.Never and changes
// nothing. The package documentation defines the Decision's fields.
//
// Take reads the clock before the log. A denial whose log holds a request
// newer than that reading (logged meanwhile by another call) reads the clock
// again and decides anew, so that its RetryAfter and ResetAfter count from a
// reading no earlier than the requests that deny it, as for a caller that
// came after them. An admission keeps its reading: its requests are logged
// at the newest logged time, itself a time within the call, and its
// ResetAfter counts from the reading, longer by the time between the two.
//
// Take with n > 1 first checks that the oldest and the n-th oldest of the
// last Limit logged requests have left the window or were refunded, then logs
// its n requests one claim at a time. With a clock that never goes back, a
// single caller's claims therefore always all pass. A later claim can still
// find its slot counted in the window: when concurrent requests of the same
// key take the room in between, or when a Refund alone, run with a later
// clock reading than Take's (concurrently, or before a clock step back),
// found an entry between those two already out of its window and marked a
// newer one in its place. Take is then denied, with RetryAfter one
// nanosecond, and the claims it already made stay logged until they leave
// the window; its ResetAfter counts from its reading, as an admission's
// does, even when the requests it met are newer (it made claims, so it
// cannot start over on a new reading). A logged time is never taken back:
// that is what makes every slot's value grow, and the whole protocol safe
// (see cell). This can make a key admit less than its limit for one
// Window, never more; it needs Take with n > 1 and, on the same key,
// concurrent requests or refunds, or a refund before a clock step back.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	d, _ := l.takeAt(key, n)
	return d
}

// takeAt is Take, which also returns, when allowed, the logged time of its
// first claim, in the limiter's time (since the epoch): every one of its
// requests is logged at that time or later.
// (It can be later than the clock reading: a request is logged at the
// newest logged time when that is ahead, after the clock stepped back.)
func (l *Limiter) takeAt(key string, n int) (hotlimit.Decision, int64) {
	if n < 1 || uint64(n) > l.limit {
		return l.report(key, n), 0
	}
	f := l.cells.Find(key) // inlined; a miss inserts. Its key is confirmed after the clock: see keyed.Found
	if f.Full() {
		return l.capped(), 0
	}
	raw := l.clock() // after Find: see kill
	c := f.Cell(key)
	if c == nil {
		// Another key's node (see keyed.Found): look key up in full,
		// then read the clock after it.
		if c = l.cells.Get(key); c == nil {
			return l.capped(), 0
		}
		raw = l.clock()
	}
	var seen ring // the ring of a denial on a stale reading, if any
	for {
		d, first, end := l.take(c, l.clamp(raw), raw, uint64(n), &seen)
		switch end {
		case takeDone:
			return d, first
		case takeDead:
			// Swept under us: claims made in the dead cell died with it,
			// so start again, all n of them, on the key's fresh cell.
			// The ring seen was the dead cell's: the fresh one can read
			// the same (next claim and slot) while it holds other requests.
			c = l.cells.Revive(key, c)
			seen = ring{}
		}
		// takeStale: denied, before any claim, on a ring newer than raw.
		raw = l.clock()
	}
}

// takeEnd is how take ended.
type takeEnd uint8

const (
	takeDone  takeEnd = iota // decided: the Decision stands
	takeDead                 // c was tombstoned: revive the key, read the clock, start again
	takeStale                // a denial on a reading older than its ring: read the clock, start again
)

// ring names a ring as a claimer read it: h, the next claim, and v, the
// stamp of its slot. Until claim h lands no claim lands but in that slot
// (see cell), and no slot holds a value twice, so two snapshots with the
// same ring saw the same logged times, only refund marks apart. The zero
// ring is none: a slot of stamp 0 (time 0, parity 0) holds claim 0, landed,
// so no snapshot with h = 0 has it.
type ring struct {
	h uint64
	v int64
}

// take logs n requests at now in c, all or none for a single caller with a
// clock that never goes back (see Take), and
// returns the logged time of the first claim; it ends with takeDead if it
// found c tombstoned, and with takeStale, setting seen, if it would deny on
// a ring newer than raw other than seen (see below). now is the limiter's
// time at the clock reading raw (see clamp); the Decision's durations count
// from raw (see leaves).
func (l *Limiter) take(c *cell, now, raw int64, n uint64, seen *ring) (hotlimit.Decision, int64, takeEnd) {
	var t, first int64 // the logged times of the last claim made and the first
	var free uint64    // entries free at t before the last claim, read before it landed
	for k := uint64(0); k < n; k++ {
		// One claim, as in Allow (argued there and on cell), at the later of
		// now and the newest logged time. Before the first, the decision is
		// made on the n-th oldest of the last L requests, claim h + n − 1 − L
		// in slot (h + n − 1) mod L: with times in claim order, n requests
		// fit exactly when it has left the window (or was refunded). That
		// slot's time does not change until claim h + n − 1 lands, after
		// claim h (claims land in order): a read of slot h mod L after it,
		// still holding what the snapshot read, checks it.
		for {
			s, fresh := c.read()
			switch {
			case !fresh:
				continue
			case s.v == packed.StampDead:
				return hotlimit.Decision{}, 0, takeDead
			}
			var ok bool
			t, ok = claimable(s.v, max(now, s.newest), l.window)
			if k > 0 {
				if !ok {
					d := l.decisionFree(0, raw, t, s.newest) // see free
					d.RetryAfter = time.Nanosecond           // room taken by concurrent requests
					return d, 0, takeDone
				}
			} else {
				// Both the oldest entry and the n-th must be claimable:
				// refunds can leave the claimable entries out of order (one
				// racing another, or one with a later clock reading than
				// ours, which marks a newer entry where an older one is
				// expired at its reading but not at ours). The wait is until
				// both are. The entries between are checked by their own
				// claims (k > 0), and one still counted denies with 1 ns.
				decisive := s.v
				if n > 1 {
					if decisive = c.load(c.at(s.h, n-1)); !c.still(&s) {
						continue
					}
				}
				_, ok2 := claimable(decisive, t, l.window)
				if (!ok || !ok2) && s.newest > now && (s.h != seen.h || s.v != seen.v) {
					// A denial on a reading older than the ring's newest
					// request (logged since at a later reading, or ahead
					// by a clock step back or the 1 ns bumps) would count
					// its waits from before that request was made. No
					// claim is made yet: the caller reads the clock again,
					// after this ring, and calls again. A ring met again
					// (the same next claim and slot: the same times) is decided
					// on that reading: with a clock that never goes back,
					// it is no earlier than any request in the ring, so
					// the call is judged at one time of its own, after the
					// others it sees, as the model orders them; and under
					// a frozen clock, whose bumps keep newest ahead of it,
					// this ends. A ring that moved in between follows
					// another caller's progress. A claim needs none of
					// this: it logs at max(now, newest), a time within the
					// call.
					*seen = ring{s.h, s.v}
					return hotlimit.Decision{}, 0, takeStale
				}
				if !ok || !ok2 {
					var free uint64 // the oldest entry counts: none (see free)
					if ok {
						var still bool
						if free, still = l.freeStill(c, s.h, s.i, s.v, t); !still {
							continue
						}
						// Entry n − 1 counts at t: at most n − 1 single
						// requests pass. A count past it (free entries out
						// of claim order, after a refund that read a later
						// clock; see free) would report a key with nothing
						// in its window, and no ResetAfter.
						free = min(free, n-1)
					}
					d := l.decisionFree(free, raw, t, s.newest)
					d.RetryAfter = max(l.wait(s.v, t, raw), l.wait(decisive, t, raw))
					return d, 0, takeDone
				}
			}
			if k == n-1 {
				// Remaining after the last claim, counted on the state this
				// claim's own CAS replaces; see free below.
				free = l.free(c, s.h, t)
			}
			if c.cas(s.i, s.v, packed.PackStamp(t, s.round)) {
				c.landed(s.h0, s.h, uint64(len(c.slots)))
				if k == 0 {
					first = t
				}
				break
			}
		}
	}
	// Linearizable Remaining. free was counted at t on the ring whose next
	// claim is h, read between the last claim's read of slot h mod L and its
	// successful CAS. That CAS succeeded, so the slot held v during all of
	// it (no slot holds a value twice): claim h had not landed, nor any later
	// claim (they land in order), nor a tombstone, and no claim lands but on
	// slot h mod L before claim h. So the ring read was the ring the CAS changed, and the claim
	// turned its oldest entry, free at t, into one logged at t, counted
	// (Window is longer than the 1 ns bumps): free − 1 requests pass after
	// it, at t. Reading the ring after the CAS instead, as this code once
	// did, counts the claims made since by others too, so two callers could
	// report the same Remaining and another value none. The one exception
	// is a concurrent Refund, which marks entries meanwhile: free
	// counts the marks made before each of its reads, so it can miss a
	// refund that lands during the claim, never count one that did not
	// (the refunded entries only grow from the expired prefix, see free).
	d := l.decisionFree(free-min(free, 1), raw, t, t) // free ≥ 1: slot h mod L was free at t
	d.Allowed = true
	return d, first, takeDone
}

// RetryAfter returns how long from now Take(key, n) must wait before its n
// requests can pass, changing nothing: 0 when they would pass now, else
// until every one of the n oldest of the last Limit requests has left the
// window or was refunded, if nothing else is taken meanwhile (a denial's
// RetryAfter, see the package documentation, as exact: 1 ns sooner they
// would still be denied). It never inserts key: a key the limiter does not
// hold waits nothing (as a fresh key's would; a key cap may still turn it
// away, see hotlimit.WithMaxKeys). n == 0 waits nothing; n greater than the limit, or
// negative, waits hotlimit.Never. A composite asks it, after another child
// denied a request, in place of a Take: a Take of several can be denied
// with some of its requests counted (see Take), and one given back holds
// the log's future capacity (see Refund).
func (l *Limiter) RetryAfter(key string, n int) time.Duration {
	switch {
	case n < 0 || uint64(n) > l.limit:
		return hotlimit.Never
	case n == 0:
		return 0
	}
	c, ok := l.cells.Peek(key)
	if !ok {
		return 0
	}
	// As decide does: the clock is read after the snapshot, so that, with a
	// clock that never goes back, it is no earlier than any request the
	// snapshot sees, and the entries are used only if slot s.i still held
	// s.v after they were read: claim s.h had not landed, nor a tombstone,
	// so entry k was claim s.h − L + k throughout, only refunds marking
	// some. Each entry is waited for, not only the oldest and the n-th:
	// refunds that read a later clock can leave the free entries out of
	// claim order (see free), and Take's later claims check the others.
	for {
		s, ok := c.read()
		if !ok {
			continue
		}
		if s.v == packed.StampDead {
			return 0 // swept: the key's next cell is fresh
		}
		raw := l.clock()
		t := max(l.clamp(raw), s.newest)
		var w time.Duration
		for k := uint64(0); k < uint64(n) && w != hotlimit.Never; k++ {
			w = max(w, l.wait(c.load(c.at(s.h, k)), t, raw))
		}
		if c.still(&s) {
			return w
		}
		// The ring moved on (a claim, a refund's mark on slot s.i, a
		// tombstone: another caller's successful CAS): read it, and the
		// clock, again.
	}
}

// wait returns how long after the clock reading raw the entry v lets a
// claim through: 0 when it already does at t, else until its time leaves
// the window (see leaves).
func (l *Limiter) wait(v, t, raw int64) time.Duration {
	if _, ok := claimable(v, t, l.window); ok {
		return 0
	}
	tv, _ := packed.UnpackStamp(v)
	return l.leaves(tv, raw)
}

// leaves returns how long after the clock reading raw (not clamped: a
// reading before minNow stands still until the clock gets there) a request
// logged at tv (since the epoch) leaves the window: tv + Window − (raw −
// epoch), or hotlimit.Never when tv + Window is past last, the latest time
// the limiter reads (packed.MaxStamp, see now, or the clock's own end,
// math.MaxInt64, when that comes first), where the request stays in the
// window for good, or when the wait is past math.MaxInt64 nanoseconds.
//
// Callers ask only about a request still in the window at a time t at or
// after the limiter's time at raw, so tv + Window > t ≥ raw − epoch when
// raw − epoch is at most last (below minNow, t ≥ minNow > raw − epoch),
// and tv + Window > last, Never, when it is past: the wait is positive.
// It is computed in 128 bits, as raw − epoch alone may not fit an int64.
func (l *Limiter) leaves(tv, raw int64) time.Duration {
	if tv > l.last-l.window {
		return hotlimit.Never
	}
	end := tv + l.window // at most last
	// end + epoch − raw, two's complement in 128 bits (hi, lo).
	lo, carry := bits.Add64(uint64(end), uint64(l.epoch), 0)
	hi := uint64(end>>63) + uint64(l.epoch>>63) + carry
	lo, borrow := bits.Sub64(lo, uint64(raw), 0)
	hi = hi - uint64(raw>>63) - borrow
	if hi != 0 || lo > math.MaxInt64 {
		return hotlimit.Never // positive (see above), so past math.MaxInt64
	}
	return time.Duration(lo)
}

// report is Take for n == 0, n > limit and n < 0: it reads key's state and
// changes nothing, not even inserting key. A missing key reports as fresh,
// and so does a dead cell (swept: every request had left the window): the
// key's next cell is fresh.
func (l *Limiter) report(key string, n int) hotlimit.Decision {
	d := hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.limit)}
	if c, ok := l.cells.Peek(key); ok {
		d = l.decide(c)
	}
	if n == 0 {
		d.Allowed = true
	} else {
		d.RetryAfter = hotlimit.Never
	}
	return d
}

// decide reports c without changing it, at a clock reading taken after its
// snapshot of the ring.
//
// The clock is read after the snapshot: every request in it was logged at
// its claimer's reading, taken before the claim's CAS, or at a newer logged
// time (up to the 1 ns bumps, which t = max(now, newest) covers), so with a
// clock that never goes back the reading is no earlier than any logged time
// the report sees, and it judges the key at one time of the call. On an
// earlier reading, a request that another call logged meanwhile at a later
// reading would be judged at its own, newer time, as after a clock step
// back, with ResetAfter counted to its expiry from the older reading: longer
// by the gap between the two readings than the key ever needed.
//
// The snapshot's rules hold as in freeStill: the count is used only if slot
// i still holds what the snapshot read, so claim h had not landed
// throughout and the ring counted is the one read. When it moved (claim h,
// a refund's mark on slot i, a tombstone), the report reads the
// ring again, and the clock after it: a reading kept from before the ring
// moved on would be older than the requests the new snapshot sees. Each
// such move is another caller's successful CAS, so some caller progresses.
func (l *Limiter) decide(c *cell) hotlimit.Decision {
	for {
		s, ok := c.read()
		if !ok {
			continue
		}
		if s.v == packed.StampDead {
			return hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.limit)}
		}
		raw := l.clock()
		t := max(l.clamp(raw), s.newest)
		free := l.free(c, s.h, t)
		if !c.still(&s) {
			continue // the ring moved on: read it, and the clock, again
		}
		return l.decisionFree(free, raw, t, s.newest)
	}
}

// decisionFree is decision for a ring of which free entries are expired or
// refunded at t, reported to a caller that read the clock at raw.
func (l *Limiter) decisionFree(free uint64, raw, t, newest int64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: int(l.limit), Remaining: int(free)}
	if d.Remaining < d.Limit && newest > t-l.window { // some request counts
		d.ResetAfter = l.leaves(newest, raw)
	}
	return d
}

// free returns how many of the last L logged requests of c, whose next claim
// is h, are expired or refunded at t: how many single requests would pass at
// t. Times are in claim order (see cell) and refunds mark the oldest counted
// entries, so those are a prefix of the ring from slot h mod L. A tombstone met on the
// way (a Sweep that landed since the caller's read) means a fresh key: all L.
//
// The search starts from a hint kept in the cell (c.hint), in one of two
// forms: the claim number where the counted entries began, or the count
// itself. The end moves little from one call to the next, and only forward
// in claim numbers: it holds while requests come with none leaving the
// window, and the count holds while they leave as fast as they come. So the
// first step probes the four entries around the hint and finds the end
// there, one before or one after, in most calls: the two either side of the
// hint first, which alone settle an end that held (entry k − 1 expired and
// no tombstone, k counted: the answer a search from k finds with the same
// two probes, whatever the other entries hold, and no write), the
// commonest call; the hint is written (a
// locked instruction, dearer than the probes) only when the other form
// would have predicted the end, or the end moved on. Else it gallops out
// from the hint to bracket the end, and bisects the bracket: a few probes of
// neighbouring slots, where bisecting the whole ring would read log2(L)
// slots far apart.
//
// The hint is only where to start: any value, stale or raced, gives the
// same answer, as the probes alone decide it, on the ring with next claim h
// whose free entries are a prefix (on another, below, the four probes and
// the search can find different ends, and the answer depends on the hint).
// (On a ring where claim h landed, the count is meaningless and depends on
// the hint: callers that decide without a CAS check with freeStill.) The
// four probes decide only on an expired entry followed by counted ones, in
// claim order, with no tombstone among them. Every probe of the search keeps lo ≤ end ≤ hi, with
// the entries before lo probed expired (or, in the prefix, implied so by a
// later one probed expired) and the one at hi, when hi < L, probed counted;
// under concurrent refunds, which only move the end forward, the answer
// lies between the end at the call's start and at its finish, as a
// bisection's would.
//
// A caller that found the entry in slot h mod L, read before claim h
// landed, counted at t does not count: no single request passes at t, so it reports
// 0. A count could say otherwise: a refund that read a later clock (racing
// the call, or before a clock step back) can mark a newer entry where an
// older one had left the window at its reading but not at t, so the entries
// free at t are then no prefix, and the search can land past that entry.
// (Where that entry is free, such marks can make the count exceed the
// requests that pass one by one; only refunds read at a later clock than
// the call's do that, and no admission depends on the count.)
func (l *Limiter) free(c *cell, h uint64, t int64) uint64 {
	L := uint64(len(c.slots))
	return c.freeFrom(h, h%L, L, t-l.window)
}

// freeStill is freeFrom for a caller whose snapshot has next claim h and, in
// slot base (h mod L), the stamp v, and decides without a CAS (a denial, a
// report): it also reports whether that slot still held v after the count.
// Only then is the count one the ring had during the call: slot base held v
// throughout (no slot holds a value twice), so claim h had not landed, nor
// any later one (claims land in order), nor a tombstone, and the count saw
// only refunds, which move the end forward, as free says. If claims landed,
// the slots from base on hold new claims in front of old entries, and a
// count from h reads a ring that never was: under a frozen clock, with
// refunds and claims meanwhile, more free entries than the key had at any
// moment of the call, or not, by where the hint starts the search. Then the
// caller decides again, which keeps the call lock-free: the slot moved by
// another caller's successful CAS (a claim, a refund's mark, a tombstone),
// so some caller made progress. A claim needs no such check: its
// CAS on slot base succeeds only under the same conditions.
func (l *Limiter) freeStill(c *cell, h, base uint64, v, t int64) (uint64, bool) {
	free := c.freeFrom(h, base, uint64(len(c.slots)), t-l.window)
	return free, c.load(base) == v
}

// freeFrom is free for a caller that knows base, h's slot h mod L, the
// ring's length L and cutoff, t − Window: passed in registers, not loaded
// again, on the observed admission's path.
func (c *cell) freeFrom(h, base, L uint64, cutoff int64) uint64 {
	hint := c.hint.Load()
	k := hintAt(hint, h, L)
	if k >= 2 && k+1 < L {
		e := base + k - 2
		if e >= L {
			e -= L
		}
		var a, b, d, x int64
		if e+3 < L {
			w := c.slots[e : e+4 : e+4]
			b, d = w[1].Load()^freshStamp, w[2].Load()^freshStamp
			if expiredBit(b, cutoff)&^expiredBit(d, cutoff)&1 == 1 && b != packed.StampDead {
				return k // the end held: entry k − 1 expired, k counted
			}
			a, x = w[0].Load()^freshStamp, w[3].Load()^freshStamp
		} else {
			a, b, d, x = c.load(e), c.load((e+1)%L), c.load((e+2)%L), c.load((e+3)%L)
		}
		// Entries k − 2 (a), k − 1 (b), k (d) and k + 1 (x): a expired and
		// x counted, b and d in claim order, and the end is k − 1, k or
		// k + 1, by how many of b and d are expired: counted without a
		// branch, as which one it is changes from call to call. A tombstone
		// reads as refunded, so never as counted; one among a, b and d
		// sends the call to the search.
		ea, eb, ed, ex := expiredBit(a, cutoff), expiredBit(b, cutoff), expiredBit(d, cutoff), expiredBit(x, cutoff)
		if ea&^ex&(eb|^ed)&1 == 1 && a != packed.StampDead && b != packed.StampDead && d != packed.StampDead {
			end := k - 1 + eb + ed
			if end != k {
				w := end<<1 | hintCount // the end moved on, or the count grew: the count
				if hint&hintCount != 0 && end < k {
					w = (h + end) << 1 // the count fell, the end held: the end
				}
				c.hint.Store(w)
			}
			return end
		}
	}
	return c.search(h, base, cutoff, hint, k)
}

// search is free past its first step: it finds the end by galloping from
// entry k, where hint pointed, and bisecting, and keeps the hint.
func (c *cell) search(h, base uint64, cutoff int64, hint, k uint64) uint64 {
	L := uint64(len(c.slots))
	lo, hi := uint64(0), L
	expired, dead := c.expiredAt(base, k, cutoff)
	if expired { // the end is past k: gallop up
		lo = k + 1
		for step := uint64(1); !dead && lo-1+step < hi; step *= 2 {
			m := lo - 1 + step
			if expired, dead = c.expiredAt(base, m, cutoff); !expired {
				hi = m
				break
			}
			lo = m + 1
		}
	} else { // the end is at k or before: gallop down
		hi = k
		for step := uint64(1); !dead && lo+step <= hi; step *= 2 {
			m := hi - step
			if expired, dead = c.expiredAt(base, m, cutoff); expired {
				lo = m + 1
				break
			}
			hi = m
		}
	}
	for !dead && lo < hi {
		mid := lo + (hi-lo)/2
		if expired, dead = c.expiredAt(base, mid, cutoff); expired {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if dead {
		return L // a fresh key's: every one of its Limit slots free
	}
	// A hint that missed the end switches form: a count that holds (n
	// requests come as n leave) and an end that holds (requests come with
	// none leaving) each settle in two misses at most. One that found it
	// (an end within two entries of claim h, or the ring's last, where the
	// four probes do not reach) is left as it is: no write.
	switch {
	case k == min(lo, L-1):
	case hint&hintCount == 0 && k > 0:
		c.hint.Store(lo<<1 | hintCount)
	default:
		c.hint.Store((h + lo) << 1)
	}
	return lo
}

// hintCount marks a cell.hint that holds a count of free entries; without it,
// the hint holds the claim number where the counted entries began.
const hintCount = 1

// hintAt returns where a count of the free entries of a ring of L, with
// next claim h, starts looking by the hint w: the same count, or the same
// claim number.
func hintAt(w, h, L uint64) uint64 {
	v := w >> 1
	if w&hintCount != 0 {
		return min(v, L-1)
	}
	if v > h {
		return min(v-h, L-1)
	}
	return 0
}

// expiredBit is 1 when stamp v is expired at cutoff (logged at or before
// it) or refunded, as claimable decides for a claim at cutoff + Window, and
// 0 when it counts. A tombstone reads as refunded.
func expiredBit(v, cutoff int64) uint64 {
	t, _ := packed.UnpackStamp(v)
	var old uint64
	if t <= cutoff {
		old = 1
	}
	return uint64(v>>1)&1 | old
}

// expiredAt reports whether entry k of c's ring from base (slot base + k,
// wrapped) is expired at cutoff (logged at or before it) or refunded, as
// claimable decides for a claim at cutoff + Window; or, dead, a tombstone.
func (c *cell) expiredAt(base, k uint64, cutoff int64) (expired, dead bool) {
	i := base + k
	if L := uint64(len(c.slots)); i >= L {
		i -= L
	}
	v := c.load(i)
	tv, _ := packed.UnpackStamp(v)
	return packed.IsRefunded(v) || tv <= cutoff, v == packed.StampDead
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

// Sweep evicts every key whose logged requests are all expired (at or before
// now − Window), and returns how many it evicted. Such a key's next request
// finds the log of a new key. Sweep is safe to run concurrently with
// anything, Sweep included.
func (l *Limiter) Sweep() int {
	now := l.now()
	return l.cells.Sweep(func(c *cell) bool { return c.kill(now, l.window) })
}
