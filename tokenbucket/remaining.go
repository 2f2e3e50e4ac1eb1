package tokenbucket

import "github.com/hotlimit/hotlimit/internal/packed"

// AllowRemaining is Allow, plus the Remaining that Take(key, 1) would report
// with it: how many single requests would still pass right now, after this
// one (when denied, before it). It computes neither RetryAfter nor
// ResetAfter, so it costs about what Allow costs: for callers that classify
// decisions by their remaining share, as a service's observer does.
func (l *Limiter) AllowRemaining(key string) (allowed bool, remaining int) {
	c := l.cells.Get(key)
	t, gen, _ := l.read() // after Get: see cell
	now, _ := l.b.Units(t)
	// The CAS loop of Allow, argued there and on cell: the new word is a
	// function of the word read and now only, so the CAS makes read, decide
	// and write one step; a concurrent write fails it and the loop decides
	// again. Remaining is counted on the word the CAS replaced, as in take.
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
			return false, int(tokens >> l.b.FracBits)
		}
		if c.word.CompareAndSwap(w, l.b.Pack(tokens-l.unit, last)) {
			return true, int((tokens - l.unit) >> l.b.FracBits)
		}
	}
}
