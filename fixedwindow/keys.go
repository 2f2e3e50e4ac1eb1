package fixedwindow

import (
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: Sweep's, one key at a time.
func (l *Limiter) idle() func(*cell) bool {
	cur, _ := packed.Window(l.clock(), l.window)
	return func(c *cell) bool { return c.kill(cur) }
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is the time to the end of the current window, after which every
// key held now is idle, and evictable, if it gets no more requests; Never,
// as untilEnd says, when that end lies past the clock's last reading.
func (l *Limiter) capped() hotlimit.Decision {
	now := l.clock()
	_, rem := packed.Window(now, l.window)
	return keyed.Capped(int(l.limit), l.untilEnd(now, 0, rem))
}
