package tokenbucket

import (
	"math"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
)

// initCell makes a zeroed cell fresh: a full bucket.
func (l *Limiter) initCell(c *cell) { c.word.Store(l.fresh) }

// idle returns the kill function of an incremental sweep step (auto-sweep,
// the key cap) at the clock's current time: it evicts buckets full now, and
// cells a filling Refund killed, reading each word under the wrap-guard
// generation it read the time under. kill judges nothing once that
// generation has passed (a Sweep completed since): the step then reads the
// clock and the generation again, as Allow does, and judges the cell again
// under them, so that a Sweep completing during a key cap's walk does not
// leave an idle key unevicted and the new key denied. A step never records
// a generation: only Sweep, which judges every key in one pass, does
// (guard.go).
func (l *Limiter) idle() func(*cell) bool {
	t, gen, _ := l.read()
	s, _ := l.b.Units(t)
	return func(c *cell) bool {
		// Each retry follows a Sweep that completed (a new generation), so
		// the loop waits for no one; the words are read only under the
		// generation the time was checked against, as guard.go requires.
		for {
			killed, ok := l.kill(c, gen, s, false)
			if ok {
				return killed
			}
			t, gen, _ = l.read()
			s, _ = l.b.Units(t)
		}
	}
}

// capped is the decision for a new key that hotlimit.WithMaxKeys turns away:
// RetryAfter is the time a drained bucket takes to fill, after which every
// key held now is full, and evictable, if it gets no more requests (from the
// epoch, for a clock behind it); Never, as wait says, when the limiter's
// time stops before then, or the clock's last reading comes first.
func (l *Limiter) capped() hotlimit.Decision {
	t, lag := l.time()
	d := uint64(l.fill)
	if d > l.stop-t || lag > math.MaxInt64-d { // t ≤ stop; d ≤ maxTime: no wrap
		return keyed.Capped(l.limit, hotlimit.Never)
	}
	return keyed.Capped(l.limit, time.Duration(d+lag))
}
