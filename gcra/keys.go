package gcra

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: Sweep's, one key at a time.
func (l *Limiter) idle() func(*cell) bool {
	s, _, _ := l.now()
	return func(c *cell) bool { return c.kill(s) }
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is the time until the limiter's time passes burst·T from now,
// after which every key held now (its TAT at most s + burst·T) is full, and
// evictable, if it gets no more requests; Never, as wait says, when that
// time never comes (the limiter's time stops first).
func (l *Limiter) capped() hotlimit.Decision {
	s, ns, lag := l.now()
	return keyed.Capped(l.limit, l.wait(s+l.span, ns, lag))
}
