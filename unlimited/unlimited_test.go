package unlimited_test

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/unlimited"
)

func TestPassesEverythingAndHoldsNothing(t *testing.T) {
	lim, err := unlimited.New()
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				assert.True(t, lim.Allow(fmt.Sprint(g, i)))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep())
	for _, n := range []int{0, 1, math.MaxInt} {
		d, r := lim.TakeReceipt("k", n)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: math.MaxInt, Remaining: math.MaxInt}, d, "n=%d", n)
		assert.Zero(t, r)
	}
	for _, n := range []int{-1, math.MinInt} {
		d, r := lim.TakeReceipt("k", n)
		assert.Equal(t, hotlimit.Decision{Limit: math.MaxInt, Remaining: math.MaxInt, RetryAfter: hotlimit.Never}, d, "n=%d: denied, nothing limits the key", n)
		assert.Zero(t, r, "n=%d", n)
		assert.Equal(t, d, lim.Take("k", n), "n=%d", n)
	}
	assert.Equal(t, math.MaxInt, lim.Burst())
	lim.Refund("k", hotlimit.Receipt{N: 5, At: 1})
	assert.Zero(t, testing.AllocsPerRun(100, func() { lim.Take("k", 1) }))
}

func TestRejectsABurst(t *testing.T) {
	_, err := unlimited.New(hotlimit.WithBurst(3))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	_, err = unlimited.New(hotlimit.WithBurst(-1))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

// TestBurstErrorSaysUnlimitedHasNoLimit: the error names the burst and says
// that Unlimited takes none, as Config.Validate does, rather than speak of a
// limit of 0 that Unlimited does not have.
func TestBurstErrorSaysUnlimitedHasNoLimit(t *testing.T) {
	_, err := unlimited.New(hotlimit.WithBurst(3))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "burst 3")
	assert.Contains(t, err.Error(), "takes no burst")
	assert.NotContains(t, err.Error(), "limit 0")

	_, err = unlimited.New(hotlimit.WithBurst(0))
	assert.NoError(t, err, "a burst of 0 is no burst")
}

func ExampleLimiter() {
	var lim unlimited.Limiter
	d := lim.Take("partner-42", 1000)
	fmt.Println(d.Allowed, d.Remaining == math.MaxInt)
	// Output: true true
}
