package fixedwindow_test

import (
	"time"

	"github.com/hotlimit/hotlimit"
)

// model is the sequential reference of a fixed window limiter: per key, the
// index of the window it counted in last and how many passed there. A key is
// held only once a request passed, so every held count is at least 1. The tests keep their clocks more than a window
// away from the ends of int64, so plain int64 arithmetic is exact.
type model struct {
	limit  int64
	window int64
	keys   map[string]modelKey
}

type modelKey struct{ index, count int64 }

func newModel(limit int, window time.Duration) *model {
	return &model{limit: int64(limit), window: int64(window), keys: map[string]modelKey{}}
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// take is Take(key, n) at now: a later window starts at zero; the same or an
// earlier one (a clock that stepped back) counts against the stored window.
func (m *model) take(key string, n int, now int64) hotlimit.Decision {
	idx := floorDiv(now, m.window)
	st, ok := m.keys[key]
	if !ok || idx > st.index {
		st = modelKey{index: idx}
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

// sweep forgets every key whose window is older than now's, as Sweep does,
// and returns how many it forgot.
func (m *model) sweep(now int64) int {
	idx := floorDiv(now, m.window)
	n := 0
	for k, st := range m.keys {
		if st.index < idx {
			delete(m.keys, k)
			n++
		}
	}
	return n
}
