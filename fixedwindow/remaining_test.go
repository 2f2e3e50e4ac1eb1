package fixedwindow_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, limit := range []int{1, 7, 20} {
		t.Run("limit="+strconv.Itoa(limit), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(fixedwindow.New), limit)
		})
	}
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: a new key that hotlimit.WithMaxKeys
// has no room for is denied with no requests remaining, as Take(key, 1)
// reports it, not with the fresh window's limit.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	now := int64(2 * time.Hour)
	lim, err := fixedwindow.New(3, time.Hour, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, lim.Allow("held"), "the one key the cap has room for, busy for the hour")
	d := lim.Take("new", 1)
	require.False(t, d.Allowed)
	require.Zero(t, d.Remaining)
	ok, rem := lim.AllowRemaining("new")
	assert.False(t, ok)
	assert.Zero(t, rem, "as Take(key, 1) reports")
}
