package fixedwindow

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestCollidingKeyTurnedAwayReportsNoneRemaining: a key whose hash leads to
// another key's node, with no room left under hotlimit.WithMaxKeys, is denied
// by AllowRemaining with no requests remaining, as Take(key, 1) reports it.
func TestCollidingKeyTurnedAwayReportsNoneRemaining(t *testing.T) {
	now := int64(2 * time.Hour)
	lim, err := New(3, time.Hour, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, lim.Allow("held"), "the one key the cap has room for, busy for the hour")
	collide(lim, "k", "other")
	ok, rem := lim.AllowRemaining("k")
	assert.False(t, ok)
	assert.Zero(t, rem)
	assert.Zero(t, lim.Take("k", 1).Remaining)
}
