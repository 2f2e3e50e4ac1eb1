package slidingcounter

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests the estimate would still pass right now,
// after this one (when denied, before it). It computes neither RetryAfter
// nor ResetAfter, so it costs about what Allow costs, plus one division for
// the estimate: for callers that classify decisions by their remaining
// share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	c := l.cells.Get(key)
	// The CAS loop of Allow, argued there and on cell, with the same clock
	// readings; Remaining is computed from the estimate the decision was
	// made on, as decision computes it for take.
	w := c.word.Load()
	cur, rem := l.index(l.clock()) // after Get and the load: see cell
	fresh := true                  // the reading was taken after w was loaded
	for {
		if w == dead {
			c = l.cells.Revive(key, c)
			w = c.word.Load()
			cur, rem = l.index(l.clock())
			fresh = true
			continue
		}
		index, prev, count, behind := advance(w, cur)
		e := elapsed(rem, behind)
		if !l.fits(prev, count, e, 1) {
			if !fresh {
				cur, rem = l.index(l.clock())
				fresh = true
				continue
			}
			return false, l.room(l.weigh(prev, e) + count) // a denial writes nothing
		}
		if c.word.CompareAndSwap(w, pack(index, prev, count+1)) {
			return true, l.room(l.weigh(prev, e) + count + 1)
		}
		w, fresh = c.word.Load(), false
	}
}

// room is decision's Remaining for the estimate est.
func (l *Limiter) room(est uint64) int {
	if est < l.limit {
		return int(l.limit - est)
	}
	return 0 // est > limit only for a clock read behind
}
