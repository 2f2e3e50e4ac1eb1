package models

import (
	"math/big"
	"time"

	"github.com/hotlimit/hotlimit"
)

// FixedWindow is the reference of the fixedwindow package: per key, the index
// of the window it counted in last and how many passed there, windows aligned
// on the clock's origin. A key is held only once a request passed, so every
// held count is at least 1. The model is exact over the whole int64 line: a
// wait until a window's end is hotlimit.Never when that end lies past
// math.MaxInt64, the last reading a clock makes, or when the wait is longer
// than a Duration holds. It does not reproduce the limiter's window index
// kept modulo 2^42, so callers keep a key's stored window within 2^41 − 1
// windows of the clock's.
type FixedWindow struct {
	limit  int64
	window int64
	keys   map[string]fixedWindowKey
}

type fixedWindowKey struct{ index, count int64 }

// NewFixedWindow returns the model of limit per window.
func NewFixedWindow(limit int, window time.Duration) *FixedWindow {
	return &FixedWindow{limit: int64(limit), window: int64(window), keys: map[string]fixedWindowKey{}}
}

// Take is Take(key, n) at now: a later window starts at zero; the same or an
// earlier one (a clock that stepped back) counts against the stored window.
func (m *FixedWindow) Take(key string, n int, now int64) hotlimit.Decision {
	idx := FloorDiv(now, m.window)
	st, ok := m.keys[key]
	if !ok || idx > st.index {
		st = fixedWindowKey{index: idx}
	}
	end := m.until(st.index, now) // the counted window's end
	d := hotlimit.Decision{Limit: int(m.limit)}
	switch {
	case n == 0:
		d.Allowed = true
	case n < 0 || int64(n) > m.limit:
		d.RetryAfter = hotlimit.Never
	case st.count+int64(n) <= m.limit:
		st.count += int64(n)
		m.keys[key] = st
		d.Allowed = true
	default:
		d.RetryAfter = end
	}
	d.Remaining = int(m.limit - st.count)
	if st.count > 0 {
		d.ResetAfter = end
	}
	return d
}

// until returns the wait from now to the end of window idx, hotlimit.Never
// when that end lies past math.MaxInt64 or the wait is longer than a
// Duration holds.
func (m *FixedWindow) until(idx, now int64) time.Duration {
	end := new(big.Int).Mul(big.NewInt(idx+1), big.NewInt(m.window))
	if !end.IsInt64() {
		return hotlimit.Never // past every reading
	}
	wait := end.Sub(end, big.NewInt(now))
	if !wait.IsInt64() {
		return hotlimit.Never // longer than a Duration holds
	}
	return time.Duration(wait.Int64())
}

// TakeReceipt is Take plus the receipt the limiter gives with it: n
// requests counted at now, or, when now lies behind the key's window (a
// clock that stepped back), at the start of that window, where they count;
// the zero Receipt when denied or n < 1.
func (m *FixedWindow) TakeReceipt(key string, n int, now int64) (hotlimit.Decision, hotlimit.Receipt) {
	d := m.Take(key, n, now)
	return d, windowReceipt(d, n, now, m.keys[key].index, m.window)
}

// Refund is Refund(key, r) at now (see hotlimit.Refunder): it lowers the
// count of r.At's window by r.N, not below zero, while that window is the
// key's and has not ended at now; a count that reaches zero leaves the key
// fresh, as one not held.
func (m *FixedWindow) Refund(key string, r hotlimit.Receipt, now int64) {
	st, ok := m.keys[key]
	at := FloorDiv(r.At, m.window)
	if r.N < 1 || !ok || at != st.index || FloorDiv(now, m.window) > at {
		return
	}
	st.count -= min(int64(r.N), st.count)
	if st.count == 0 {
		delete(m.keys, key)
		return
	}
	m.keys[key] = st
}

// Sweep forgets every key whose window is older than now's, as
// fixedwindow.Limiter.Sweep does, and returns how many it forgot.
func (m *FixedWindow) Sweep(now int64) int {
	idx := FloorDiv(now, m.window)
	n := 0
	for k, st := range m.keys {
		if st.index < idx {
			delete(m.keys, k)
			n++
		}
	}
	return n
}

// Len returns the number of keys the model holds.
func (m *FixedWindow) Len() int { return len(m.keys) }
