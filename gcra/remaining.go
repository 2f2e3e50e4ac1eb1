package gcra

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass right now, after this
// one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	c := l.cells.Get(key)
	// The CAS loop of Allow, argued there and on cell, with the same clock
	// readings; Remaining is computed from the TAT the decision leaves, as
	// decision computes it for take.
	w := c.word.Load()
	s, _, _ := l.now()
	fresh := true // s was read after w was loaded
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
			return false, l.remaining(w, s) // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, base+l.tsc) {
			return true, l.remaining(base+l.tsc, s)
		}
		w, fresh = c.word.Load(), false
	}
}

// remaining is decision's Remaining for the TAT tat at the limiter's time s.
func (l *Limiter) remaining(tat, s uint64) int {
	switch {
	case tat <= s:
		return int(l.burst)
	case tat-s < l.span:
		return int((l.span - (tat - s)) / l.tsc)
	}
	return 0 // a clock that went back: no tokens, none owed
}
