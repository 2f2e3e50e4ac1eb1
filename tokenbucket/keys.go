package tokenbucket

import (
	"time"

	"github.com/hotlimit/hotlimit"
)

// initCell makes a zeroed cell fresh: a full bucket.
func (l *Limiter) initCell(c *cell) { c.word.Store(l.fresh) }

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: it evicts buckets full now, and
// cells a filling Refund killed, reading each word under the wrap-guard
// generation it read the time under, and kills nothing once that generation
// has passed. A step never records a
// generation: only Sweep, which judges every key in one pass, does (guard.go).
func (l *Limiter) idle() func(*cell) bool {
	t, gen, _ := l.read()
	s, _ := l.b.Units(t)
	return func(c *cell) bool {
		killed, _ := l.kill(c, gen, s, false) // nothing once gen has passed
		return killed
	}
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is the time a drained bucket takes to fill, after which every
// key held now is full, and evictable, if it gets no more requests.
func (l *Limiter) capped() hotlimit.Decision {
	return hotlimit.Decision{Limit: l.limit, RetryAfter: time.Duration(l.fill)}
}
