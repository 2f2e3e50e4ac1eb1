package slidingcounter

import (
	"time"

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
// RetryAfter is the time to the end of the next window, after which both
// counts of every key held now have left the estimate, and the key is
// evictable, if it gets no more requests; Never, as wait says, when that end
// lies past the clock's last reading, math.MaxInt64.
func (l *Limiter) capped() hotlimit.Decision {
	now := l.clock()
	_, rem := packed.Window(now, l.window)
	d := hotlimit.Never
	if w := 2*l.window - rem; w <= clockLeft(now) { // w < 2·Window: no wrap
		d = time.Duration(w)
	}
	return keyed.Capped(int(l.limit), d)
}
