package fixedwindow

import (
	"testing"

	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestCollidingKeyDecidesOnItsOwnCell(t *testing.T) {
	limitertest.CollidingKeyDecidesOnItsOwnCell(t, limitertest.Adapt(New), func(lim limitertest.Keyed, key, other string) func() bool {
		c := keyed.Collide(lim.(*Limiter).cells, key, other)
		w := c.word.Load()
		return func() bool { return c.word.Load() == w }
	})
}
