package unlimited_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/unlimited"
)

// TestBadInputToUnlimited: the zero Limiter, a nil *Limiter and one New
// made pass every count from 0 to math.MaxInt under any key, deny a
// negative one with RetryAfter Never, and take nothing to give back; New
// refuses a burst.
func TestBadInputToUnlimited(t *testing.T) {
	made, err := unlimited.New(nil, hotlimit.WithBurst(0), hotlimit.WithClock(nil))
	require.NoError(t, err)
	for name, l := range map[string]*unlimited.Limiter{"zero": {}, "nil": nil, "made": made} {
		t.Run(name, func(t *testing.T) {
			require.NotPanics(t, func() {
				for _, key := range []string{"", "\xff", strings.Repeat("k", 1<<16)} {
					assert.True(t, l.Allow(key))
					for _, n := range []int{0, 1, math.MaxInt} {
						d, r := l.TakeReceipt(key, n)
						assert.True(t, d.Allowed, "n=%d", n)
						assert.Zero(t, r)
					}
					for _, n := range []int{-1, math.MinInt} {
						d := l.Take(key, n)
						assert.False(t, d.Allowed, "n=%d", n)
						assert.Equal(t, hotlimit.Never, d.RetryAfter, "n=%d", n)
					}
					l.Refund(key, hotlimit.Receipt{N: math.MinInt, At: math.MaxInt64})
				}
				assert.Zero(t, l.Len())
				assert.Zero(t, l.Sweep())
				assert.Equal(t, math.MaxInt, l.Burst())
			})
		})
	}
	for _, b := range []int{math.MinInt, -1, 1, math.MaxInt} {
		l, err := unlimited.New(hotlimit.WithBurst(b))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "burst %d", b)
		assert.Nil(t, l)
	}
}
