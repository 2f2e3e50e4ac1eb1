package slidinglog

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: Sweep's, one key at a time.
func (l *Limiter) idle() func(*cell) bool {
	now := l.now()
	return func(c *cell) bool { return c.kill(now, l.window) }
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is a window from the limiter's time, after which every request
// logged so far has expired and every key held now is evictable, if it gets
// no more requests; Never, as leaves says, when a request logged now stays
// in the window for good (the limiter's time stops first).
func (l *Limiter) capped() hotlimit.Decision {
	raw := l.clock()
	return keyed.Capped(int(l.limit), l.leaves(l.clamp(raw), raw))
}
