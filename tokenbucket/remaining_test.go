package tokenbucket_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestAllowRemainingAgreesWithTake: AllowRemaining answers what Take(key, 1)
// answers, and allocates nothing; see limitertest.AllowRemainingAgreesWithTake.
func TestAllowRemainingAgreesWithTake(t *testing.T) {
	for _, burst := range []int{0, 3, 20} {
		t.Run("burst="+strconv.Itoa(burst), func(t *testing.T) {
			limitertest.AllowRemainingAgreesWithTake(t, limitertest.Adapt(tokenbucket.New, hotlimit.WithBurst(burst)), 7)
		})
	}
}

// TestAllowRemainingOfAKeyTheCapTurnsAway: a new key that hotlimit.WithMaxKeys
// has no room for is denied with no tokens remaining, as Take(key, 1)
// reports it, not with a fresh bucket's burst.
func TestAllowRemainingOfAKeyTheCapTurnsAway(t *testing.T) {
	now := int64(2 * time.Hour)
	lim, err := tokenbucket.New(3, time.Hour, hotlimit.WithMaxKeys(1), hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	require.True(t, lim.Allow("held"), "the one key the cap has room for, not full for 20 minutes")
	d := lim.Take("new", 1)
	require.False(t, d.Allowed)
	require.Zero(t, d.Remaining)
	ok, rem := lim.AllowRemaining("new")
	assert.False(t, ok)
	assert.Zero(t, rem, "as Take(key, 1) reports")
}
