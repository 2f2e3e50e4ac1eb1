package models

import (
	"time"

	"github.com/hotlimit/hotlimit"
)

// FixedWindow is the reference of the fixedwindow package: per key, the index
// of the window it counted in last and how many passed there, windows aligned
// on the clock's origin. A key is held only once a request passed, so every
// held count is at least 1. Callers keep their clocks more than a window
// away from the ends of int64, so plain int64 arithmetic is exact.
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
	end := time.Duration((st.index+1)*m.window - now) // the counted window's end
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
