package slidinglog

import (
	"testing"

	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestCollidingKeyDecidesOnItsOwnCell(t *testing.T) {
	limitertest.CollidingKeyDecidesOnItsOwnCell(t, limitertest.Adapt(New), func(lim limitertest.Keyed, key, other string) func() bool {
		c := keyed.Collide(lim.(*Limiter).cells, key, other)
		head, slot := c.head.Load(), c.slots[0].Load()
		return func() bool { return c.head.Load() == head && c.slots[0].Load() == slot }
	})
}
