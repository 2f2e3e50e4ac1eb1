package service

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidateAgreesWithConstructors checks that Config.Validate accepts
// exactly the Configs that the algorithm's own constructor accepts, at the
// edges of every range and at random points.
func TestValidateAgreesWithConstructors(t *testing.T) {
	for alg, newLimiter := range constructors {
		if alg == hotlimit.Unlimited {
			continue // no range: see TestUnlimitedTakesNoFields
		}
		r := alg.Range()
		require.Positive(t, r.MaxLimit, "%v has a range", alg)
		limits := []int{-1, 0, 1, 2, 7, r.MaxLimit - 1, r.MaxLimit, r.MaxLimit + 1, math.MaxInt / 2, math.MaxInt}
		windows := []time.Duration{-1, 0, 1, r.MinWindow - 1, r.MinWindow, time.Second, r.MaxWindow - 1, r.MaxWindow, r.MaxWindow + 1, 1 << 62}
		bursts := []int{-1, 0}
		if alg.HasBurst() {
			bursts = append(bursts, 1, 2, r.MaxBurst-1, r.MaxBurst, r.MaxBurst+1)
		}
		rng := rand.New(rand.NewPCG(1, uint64(alg)))
		check := func(c hotlimit.Config) {
			verr := c.Validate()
			_, cerr := newLimiter(c.Limit, c.Window, hotlimit.WithBurst(c.Burst))
			if !assert.Equal(t, cerr == nil, verr == nil, "%+v: Validate says %v, the constructor %v", c, verr, cerr) {
				return
			}
			if verr != nil {
				assert.ErrorIs(t, verr, hotlimit.ErrInvalidConfig)
				assert.ErrorIs(t, cerr, hotlimit.ErrInvalidConfig)
			}
		}
		for _, l := range limits {
			for _, w := range windows {
				for _, b := range bursts {
					check(hotlimit.Config{Algorithm: alg, Limit: l, Window: w, Burst: b})
				}
				if alg.HasBurst() {
					check(hotlimit.Config{Algorithm: alg, Limit: l, Window: w, Burst: l})
				}
			}
		}
		for range 2000 {
			c := hotlimit.Config{
				Algorithm: alg,
				Limit:     1 + rng.IntN(r.MaxLimit+2),
				Window:    time.Duration(rng.Int64N(int64(r.MaxWindow) + int64(time.Hour))),
			}
			if r.MaxBurst > 0 && rng.IntN(2) == 0 {
				c.Burst = rng.IntN(r.MaxBurst + 2)
			}
			check(c)
		}
	}
}

// TestNegativeBurstIsRejectedEverywhere: a negative burst is a caller's bug,
// never read as the default.
func TestNegativeBurstIsRejectedEverywhere(t *testing.T) {
	for alg, newLimiter := range constructors {
		_, err := newLimiter(5, time.Second, hotlimit.WithBurst(-1))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", alg)
		assert.ErrorIs(t, hotlimit.Config{Algorithm: alg, Limit: 5, Window: time.Second, Burst: -1}.Validate(), hotlimit.ErrInvalidConfig, "%v", alg)
	}
}

func TestUnlimitedTakesNoFields(t *testing.T) {
	assert.NoError(t, hotlimit.Config{Algorithm: hotlimit.Unlimited}.Validate())
	assert.NoError(t, hotlimit.Config{Algorithm: hotlimit.Unlimited, Shadow: true}.Validate())
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.Unlimited, Limit: 1},
		{Algorithm: hotlimit.Unlimited, Window: time.Second},
		{Algorithm: hotlimit.Unlimited, Burst: 1},
	} {
		assert.ErrorIs(t, c.Validate(), hotlimit.ErrInvalidConfig, "%+v", c)
	}
	lim, err := NewLimiter(hotlimit.Config{Algorithm: hotlimit.Unlimited})
	require.NoError(t, err)
	assert.True(t, lim.Take("k", math.MaxInt).Allowed)
}
