package fixedwindow

import (
	"testing"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestCollidingKeyDecidesOnItsOwnCell(t *testing.T) {
	limitertest.CollidingKeyDecidesOnItsOwnCell(t, limitertest.Adapt(New), collide)
}

func TestCollidingKeyTurnedAwayByTheCap(t *testing.T) {
	limitertest.CollidingKeyTurnedAwayByTheCap(t, limitertest.Adapt(New, hotlimit.WithMaxKeys(1)), collide)
}

// collide puts a node of other under key's hash in lim's map (see
// keyed.Collide), and returns a function that reports whether its cell is
// still as it was.
func collide(lim limitertest.Keyed, key, other string) func() bool {
	c := keyed.Collide(lim.(*Limiter).cells, key, other)
	w := c.word.Load()
	return func() bool { return c.word.Load() == w }
}
