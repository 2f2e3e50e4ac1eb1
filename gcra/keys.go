package gcra

import "github.com/hotlimit/hotlimit"

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: Sweep's, one key at a time.
func (l *Limiter) idle() func(*cell) bool {
	s, _, _ := l.now()
	return func(c *cell) bool { return c.kill(s) }
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is burst·T, after which every key held now is full, and
// evictable, if it gets no more requests.
func (l *Limiter) capped() hotlimit.Decision {
	return hotlimit.Decision{Limit: l.limit, RetryAfter: l.wait(l.span, 0, 0)}
}
