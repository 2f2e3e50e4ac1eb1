package slidinglog

import (
	"fmt"
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

// takeAttempts bounds how many times Take with n > 1 starts again after other
// requests claimed slots between its own (see Take).
const takeAttempts = 4

// Limiter admits a request from a key when fewer than its limit passed in the
// window before it; see the package documentation for the model. Build it
// with New. It is safe for concurrent use.
type Limiter struct {
	cells  *keyed.Map[cell]
	clock  hotlimit.Clock
	limit  uint64
	window int64 // nanoseconds, in [MinWindow, MaxWindow]
	minNow int64 // packed.MinStamp + window: the earliest time a call uses
}

var _ hotlimit.Limiter = (*Limiter)(nil)

// New returns a limiter that admits limit requests per key in any window of
// the given length. limit must lie in [1, MaxLimit] and window in
// [MinWindow, MaxWindow]; otherwise New returns an error that names the field
// and its range and wraps hotlimit.ErrInvalidConfig.
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
	newCell := func() *cell { return &cell{slots: make([]atomic.Int64, limit)} }
	l.cells = keyed.New(newCell, o.AutoSweep, l.Sweep)
	return l, nil
}

// now reads the clock, clamped to [minNow, packed.MaxStamp] so that every
// logged time packs into a slot, a fresh slot is always expired, and every
// difference of two times fits an int64.
func (l *Limiter) now() int64 {
	return min(max(l.clock(), l.minNow), packed.MaxStamp)
}

// Allow reports whether one request from key passes, and logs it if so. It
// is Take(key, 1).Allowed, without building the Decision.
func (l *Limiter) Allow(key string) bool {
	c := l.cells.Get(key)
	now := l.now() // after Get: see kill
	// One claim, as argued on cell: decide on the oldest of the last L
	// requests, read while head was h; log by CAS on that very slot, which
	// succeeds only if no other claim or tombstone landed since the read (a
	// slot never holds a value twice), and only replaces a time expired at
	// the new one, so each slot's admitted times grow by Window or more.
	for {
		s, ok := c.read()
		switch {
		case !ok:
			continue // head moved: another claim completed
		case s.v == packed.StampDead:
			c = l.cells.Revive(key, c)
			now = l.now()
			continue
		case s.pending():
			c.head.CompareAndSwap(s.h, s.h+1) // complete the other claim
			continue
		}
		t := max(now, s.newest)
		if oldest, _ := packed.UnpackStamp(s.v); oldest > t-l.window {
			return false // a denial writes nothing
		}
		if c.cas(s.i, s.v, packed.PackStamp(t, s.round)) {
			c.head.CompareAndSwap(s.h, s.h+1)
			return true
		}
	}
}

// Take asks for n requests from key at once: all pass and are logged, or none
// is. Take(key, 0) reports the key's state without changing it; n greater than
// the limit or negative is denied with RetryAfter hotlimit.Never and changes
// nothing. The package documentation defines the Decision's fields.
//
// Take with n > 1 logs its n requests one claim at a time, on consecutive
// claims of the ring. When another request of the same key claims a slot in
// between, it takes its claims back (see rollback) and starts again, at most
// a few times; it is then denied, with RetryAfter one nanosecond, although
// n requests might have fitted. The slots it took back stay unusable until
// the ring's head comes round to them again, at the latest one Window later:
// contention can make the key admit less than its limit in that Window, never
// more. This only happens to concurrent calls on one key that mix Take with
// n > 1 and other requests; a single caller always gets the exact answer.
func (l *Limiter) Take(key string, n int) hotlimit.Decision {
	if n < 1 || uint64(n) > l.limit {
		return l.report(key, n)
	}
	c := l.cells.Get(key)
	now := l.now() // after Get: see kill
	for attempt := 1; ; attempt++ {
		d, out := l.take(c, now, uint64(n))
		switch out {
		case done:
			return d
		case dead:
			c = l.cells.Revive(key, c)
			now = l.now()
			attempt = 0
		case conflict:
			if attempt >= takeAttempts {
				d = l.decide(c, now)
				d.RetryAfter = time.Nanosecond
				return d
			}
		}
	}
}

type outcome uint8

const (
	done     outcome = iota // allowed or denied: the Decision stands
	dead                    // the cell was tombstoned: revive and start again
	conflict                // another claim landed between n > 1 claims
)

// take makes one attempt at logging n requests at now in c.
func (l *Limiter) take(c *cell, now int64, n uint64) (hotlimit.Decision, outcome) {
	// The first claim is Allow's, except that it decides on the n-th oldest
	// of the last L requests, claim h + n − 1 − L, in slot (h + n − 1) mod L:
	// with times in claim order, n requests fit exactly when it is expired.
	// That slot changes while head is h only by a rollback, which makes its
	// time older.
	var s snapshot
	var t int64
	for {
		var ok bool
		if s, ok = c.read(); !ok {
			continue
		}
		if s.v == packed.StampDead {
			return hotlimit.Decision{}, dead
		}
		if s.pending() {
			c.head.CompareAndSwap(s.h, s.h+1)
			continue
		}
		t = max(now, s.newest)
		nth := s.v
		if n > 1 {
			nth = c.load(c.at(s.h, n-1))
			if c.head.Load() != s.h {
				continue
			}
		}
		if tn, _ := packed.UnpackStamp(nth); tn > t-l.window {
			d := l.decision(c, s.h, now, t, s.newest)
			d.RetryAfter = time.Duration(tn + l.window - now)
			return d, done
		}
		if c.cas(s.i, s.v, packed.PackStamp(t, s.round)) {
			c.head.CompareAndSwap(s.h, s.h+1)
			break
		}
	}
	// The next claims, h+1 to h+n−1, at the same time t, each as the first
	// but only while head is exactly that claim's number: a head beyond it,
	// or its slot claimed by someone else, means another request came in
	// between, and the claims made so far are rolled back.
	first := s.h
	for k := uint64(1); k < n; k++ {
		h := first + k
		i, round := c.at(h, 0), h/l.limit
		for {
			// Our claim h−1 advanced head to h itself or through a helper:
			// head is h or beyond.
			if c.head.Load() != h {
				l.rollback(c, first, k, t)
				return hotlimit.Decision{}, conflict
			}
			v := c.load(i)
			if c.head.Load() != h {
				continue
			}
			if v == packed.StampDead {
				l.rollback(c, first, k, t)
				return hotlimit.Decision{}, dead
			}
			if ts, parity := packed.UnpackStamp(v); parity == round&1 || ts > t-l.window {
				// Claimed by another request, or (after a rollback broke
				// the time order) not yet expired.
				l.rollback(c, first, k, t)
				return hotlimit.Decision{}, conflict
			}
			if c.cas(i, v, packed.PackStamp(t, round)) {
				c.head.CompareAndSwap(h, h+1)
				break
			}
		}
	}
	d := l.decision(c, c.head.Load(), now, t, t)
	d.Allowed = true
	return d, done
}

// rollback takes back claims first to first+k−1, all logged at t: each slot
// goes, by CAS from the claim's own stamp, to time t − Window with the claim's
// parity. That time is at or after the slot's previous time (the claim
// replaced only a time expired at t), so admitted times in the slot still grow
// by Window or more, and the slot passes again from t on, as if the claim had
// not been made. The parity stays the round's, so the slot still reads as
// claimed in this round and no value repeats. A CAS that fails finds the slot
// already claimed by the next round, which accepted the claim's time as
// expired: the claim then stays spent, which only ever admits less.
func (l *Limiter) rollback(c *cell, first, k uint64, t int64) {
	for h := first; h < first+k; h++ {
		i, round := c.at(h, 0), h/l.limit
		c.cas(i, packed.PackStamp(t, round), packed.PackStamp(t-l.window, round))
	}
}

// report is Take for n == 0, n > limit and n < 0: it reads key's state and
// changes nothing, not even inserting key.
func (l *Limiter) report(key string, n int) hotlimit.Decision {
	now := l.now()
	d := hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.limit)}
	if c, ok := l.cells.Peek(key); ok {
		d = l.decide(c, now)
	}
	if n == 0 {
		d.Allowed = true
	} else {
		d.RetryAfter = hotlimit.Never
	}
	return d
}

// decide reports c at now without changing it.
func (l *Limiter) decide(c *cell, now int64) hotlimit.Decision {
	for {
		s, ok := c.read()
		if !ok {
			continue
		}
		if s.v == packed.StampDead {
			return hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.limit)}
		}
		h := s.h
		if s.pending() { // claim h is in: read as if head had moved on
			h++
			s.newest, _ = packed.UnpackStamp(s.v)
		}
		return l.decision(c, h, now, max(now, s.newest), s.newest)
	}
}

// decision reports c with head h at time t (the caller's clock read, now,
// or the newest logged time if later), newest being the newest logged time.
// Allowed and RetryAfter are left for the caller.
func (l *Limiter) decision(c *cell, h uint64, now, t, newest int64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: int(l.limit), Remaining: int(l.free(c, h, t))}
	if newest > t-l.window {
		d.ResetAfter = time.Duration(newest + l.window - now)
	}
	return d
}

// free returns how many of the last L logged requests of c, with head h, are
// expired at t: how many single requests would pass at t. Times are in claim
// order (see cell), so the expired ones are a prefix of the ring from the
// head, found by binary search. A rollback can break that order; the count is
// then approximate, never the limit's decision.
func (l *Limiter) free(c *cell, h uint64, t int64) uint64 {
	lo, hi := uint64(0), l.limit
	for lo < hi {
		mid := lo + (hi-lo)/2
		if ts, _ := packed.UnpackStamp(c.load(c.at(h, mid))); ts <= t-l.window {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// Len returns the number of keys held.
func (l *Limiter) Len() int {
	return l.cells.Len()
}

// Sweep evicts every key whose logged requests are all expired (at or before
// now − Window), and returns how many it evicted. Such a key's next request
// finds the log of a new key. Sweep is safe to run concurrently with
// anything, Sweep included; it reads every slot of every key, so it costs
// time in proportion to keys × limit.
func (l *Limiter) Sweep() int {
	now := l.now()
	return l.cells.Sweep(func(c *cell) bool { return c.kill(now, l.window) })
}
