package fixedwindow

import "github.com/hotlimit/hotlimit/internal/packed"

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass in the window, after
// this one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	c := l.cells.Get(key)
	// The CAS loop of Allow, argued there and on cell, with the same clock
	// readings; Remaining is the window's room after the decision, as
	// decision computes it for take.
	cur, _ := l.index(l.clock())
	fresh := false // whether cur was read after w was loaded
	w := c.word.Load()
	for {
		if w == packed.WindowDead {
			c = l.cells.Revive(key, c)
			cur, _ = l.index(l.clock())
			w, fresh = c.word.Load(), false
			continue
		}
		index, count, behind := advance(w, cur)
		if count >= l.limit {
			if behind != 0 && !fresh {
				cur, _ = l.index(l.clock())
				fresh = true
				continue
			}
			return false, int(l.limit - count) // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, packed.PackWindow(index, count+1)) {
			return true, int(l.limit - count - 1)
		}
		w, fresh = c.word.Load(), false
	}
}
