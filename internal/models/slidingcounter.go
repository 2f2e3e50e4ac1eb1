package models

import (
	"math"
	"math/bits"
	"time"

	"github.com/hotlimit/hotlimit"
)

// SlidingCounter is the reference of the slidingcounter package: per key,
// the index of the window it counted in last and the counts of that window
// and the one before; a request at offset e into its window sees
// ⌊prev·(window − e)/window⌋ + cur. A key is held once a request passed;
// a held key whose counts are both zero (its requests were refunded) is
// fresh, as a key not held is, whatever its window: a refund that takes
// both to zero forgets the key, and Sweep forgets the keys whose counts are
// both zero at the time of the sweep. RetryAfter and ResetAfter are found by
// binary search over the estimate, not by the limiter's closed form, and are
// hotlimit.Never when the estimate still exceeds its target at
// math.MaxInt64, the last reading a clock makes, or when the wait is longer
// than a Duration holds. The model is exact over the whole int64 line; it
// does not reproduce the limiter's window index kept modulo 2^30, so callers
// keep a key's stored window within 2^29 − 2 windows of the clock's.
type SlidingCounter struct {
	limit  int64
	window int64
	keys   map[string]slidingCounterKey
}

type slidingCounterKey struct{ index, prev, cur int64 }

// NewSlidingCounter returns the model of limit per window.
func NewSlidingCounter(limit int, window time.Duration) *SlidingCounter {
	return &SlidingCounter{limit: int64(limit), window: int64(window), keys: map[string]slidingCounterKey{}}
}

// at returns the key's state as a request at now sees it, and the elapsed
// time the estimate weighs prev at: the same window keeps the counts, the next
// moves cur to prev, later ones start at zero, and an earlier one (a clock
// that stepped back) keeps the stored window, weighed at its start. A state
// whose counts are both zero is fresh: it starts at now's window.
func (m *SlidingCounter) at(st slidingCounterKey, ok bool, now int64) (slidingCounterKey, int64) {
	idx := FloorDiv(now, m.window)
	e := now - idx*m.window
	switch {
	case !ok || st.prev == 0 && st.cur == 0 || idx > st.index+1:
		return slidingCounterKey{index: idx}, e
	case idx == st.index+1:
		return slidingCounterKey{index: idx, prev: st.cur}, e
	case idx == st.index:
		return st, e
	default:
		return st, 0
	}
}

// est is ⌊prev·(Window − e)/Window⌋ + cur, in 128 bits.
func (m *SlidingCounter) est(st slidingCounterKey, e int64) int64 {
	hi, lo := bits.Mul64(uint64(st.prev), uint64(m.window-e))
	q, _ := bits.Div64(hi, lo, uint64(m.window))
	return int64(q) + st.cur
}

// estAt is the key's estimate at now, nothing being taken.
func (m *SlidingCounter) estAt(key string, now int64) int64 {
	st, ok := m.keys[key]
	st, e := m.at(st, ok, now)
	return m.est(st, e)
}

// until finds by binary search the smallest wait after now at which the
// key's estimate is at most t (the estimate only falls as time passes):
// hotlimit.Never when no reading up to math.MaxInt64 brings it there, or when
// the wait is longer than a Duration holds.
func (m *SlidingCounter) until(key string, now, t int64) time.Duration {
	if m.estAt(key, now) <= t {
		return 0
	}
	// A bound that usually passes, to keep the search short: three windows
	// after now, or after the stored window's start when the clock is
	// behind it; the search then checks it and widens it to math.MaxInt64.
	hi := addSat(now, 3*m.window)
	if st, ok := m.keys[key]; ok && st.index > FloorDiv(now, m.window) {
		// The stored window's start, a window's start at or before some
		// reading, is an int64.
		hi = max(hi, addSat(st.index*m.window, 3*m.window))
	}
	if m.estAt(key, hi) > t {
		hi = math.MaxInt64
		if m.estAt(key, hi) > t {
			return hotlimit.Never // not even at the last reading a clock makes
		}
	}
	lo := now // lo fails, hi passes
	for uint64(hi)-uint64(lo) > 1 {
		mid := lo + int64((uint64(hi)-uint64(lo))/2)
		if m.estAt(key, mid) <= t {
			hi = mid
		} else {
			lo = mid
		}
	}
	if wait := uint64(hi) - uint64(now); wait <= math.MaxInt64 {
		return time.Duration(wait)
	}
	return hotlimit.Never // longer than a Duration holds
}

// addSat returns a + b for b ≥ 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Take is Take(key, n) at now.
func (m *SlidingCounter) Take(key string, n int, now int64) hotlimit.Decision {
	st0, ok := m.keys[key]
	st, e := m.at(st0, ok, now)
	est := m.est(st, e)
	d := hotlimit.Decision{Limit: int(m.limit)}
	switch {
	case n == 0:
		d.Allowed = true
	case n < 0 || int64(n) > m.limit:
		d.RetryAfter = hotlimit.Never
	case est+int64(n) <= m.limit:
		st.cur += int64(n)
		est += int64(n)
		m.keys[key] = st
		d.Allowed = true
	default:
		d.RetryAfter = m.until(key, now, m.limit-int64(n))
	}
	d.Remaining = int(max(m.limit-est, 0))
	d.ResetAfter = m.until(key, now, 0)
	return d
}

// TakeReceipt is Take plus the receipt the limiter gives with it: n
// requests counted at now, or, when now lies behind the key's window (a
// clock that stepped back), at the start of that window, where they count;
// the zero Receipt when denied or n < 1.
func (m *SlidingCounter) TakeReceipt(key string, n int, now int64) (hotlimit.Decision, hotlimit.Receipt) {
	d := m.Take(key, n, now)
	return d, windowReceipt(d, n, now, m.keys[key].index, m.window)
}

// Sweep forgets every key whose counts both read zero at now (its window is
// two or more before now's, or refunds took both counts to zero), as
// slidingcounter.Limiter.Sweep does, and returns how many it forgot.
func (m *SlidingCounter) Sweep(now int64) int {
	n := 0
	for k, st := range m.keys {
		if st, _ := m.at(st, true, now); st.prev == 0 && st.cur == 0 {
			delete(m.keys, k)
			n++
		}
	}
	return n
}

// Len returns the number of keys the model holds.
func (m *SlidingCounter) Len() int { return len(m.keys) }

// Refund is Refund(key, r) at now: it lowers the count of r.At's window by
// r.N, not below zero, while that window is the key's stored window (cur) or
// the one before it (prev) and now is less than two windows after it; a key
// whose counts are then both zero is forgotten.
func (m *SlidingCounter) Refund(key string, r hotlimit.Receipt, now int64) {
	st, ok := m.keys[key]
	if r.N < 1 || !ok {
		return
	}
	at := FloorDiv(r.At, m.window)
	if FloorDiv(now, m.window)-at >= 2 {
		return
	}
	switch at {
	case st.index:
		st.cur -= min(int64(r.N), st.cur)
	case st.index - 1:
		st.prev -= min(int64(r.N), st.prev)
	}
	if st.prev == 0 && st.cur == 0 {
		delete(m.keys, key) // fresh, and no longer held, as the limiter evicts it
		return
	}
	m.keys[key] = st
}
