package hotlimit_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// constructors are the algorithms' own constructors, which service.NewLimiter
// calls only after Validate: asked directly, they must agree with it.
var constructors = map[hotlimit.Algorithm]func(limit int, window time.Duration, opts ...hotlimit.Option) error{
	hotlimit.TokenBucket: func(l int, w time.Duration, o ...hotlimit.Option) error {
		_, err := tokenbucket.New(l, w, o...)
		return err
	},
	hotlimit.GCRA: func(l int, w time.Duration, o ...hotlimit.Option) error {
		_, err := gcra.New(l, w, o...)
		return err
	},
	hotlimit.FixedWindow: func(l int, w time.Duration, o ...hotlimit.Option) error {
		_, err := fixedwindow.New(l, w, o...)
		return err
	},
	hotlimit.SlidingCounter: func(l int, w time.Duration, o ...hotlimit.Option) error {
		_, err := slidingcounter.New(l, w, o...)
		return err
	},
	hotlimit.SlidingLog: func(l int, w time.Duration, o ...hotlimit.Option) error {
		_, err := slidinglog.New(l, w, o...)
		return err
	},
}

// FuzzConfigBuildsWhatItSays: for any Config, the algorithm's own
// constructor (given the Burst by WithBurst) and service.NewLimiter build a
// limiter exactly when Validate accepts the Config (errors wrap
// ErrInvalidConfig), but for the leniency Validate documents (WithBurst of
// the limit for an algorithm without a burst), and the limiter it builds is the policy the Config
// names: its Burst is the Config's Capacity, a fresh key reports the
// Config's Limit with Capacity remaining and nothing to wait for, and passes
// Capacity requests at once but not one more.
func FuzzConfigBuildsWhatItSays(f *testing.F) {
	f.Add(uint8(1), int64(5), int64(time.Second), int64(10))
	f.Add(uint8(2), int64(1<<22-2), int64(366*24*time.Hour), int64(0))
	f.Add(uint8(3), int64(1<<16), int64(time.Millisecond), int64(0))
	f.Add(uint8(4), int64(1), int64(24*time.Hour), int64(366))
	f.Add(uint8(4), int64(1), int64(24*time.Hour), int64(367))
	f.Add(uint8(5), int64(1<<17-2), int64(time.Millisecond-1), int64(0))
	f.Add(uint8(6), int64(0), int64(0), int64(0))
	f.Add(uint8(6), int64(1), int64(0), int64(0))
	f.Add(uint8(1), int64(1<<20), int64(time.Millisecond), int64(1<<20))
	f.Add(uint8(1), int64(-1), int64(-1), int64(-1))
	f.Add(uint8(2), int64(3), int64(time.Second), int64(3))
	f.Fuzz(func(t *testing.T, alg uint8, limit, window, burst int64) {
		c := hotlimit.Config{Algorithm: hotlimit.Algorithm(alg % 8), Limit: int(limit), Window: time.Duration(window), Burst: int(burst)}
		if int64(c.Limit) != limit || int64(c.Burst) != burst {
			t.Skip("does not fit an int")
		}
		verr := c.Validate()
		if newLimiter, ok := constructors[c.Algorithm]; ok {
			cerr := newLimiter(c.Limit, c.Window, hotlimit.WithBurst(c.Burst))
			want := verr
			if !c.Algorithm.HasBurst() && c.Burst == c.Limit {
				noBurst := c
				noBurst.Burst = 0
				want = noBurst.Validate() // the leniency: WithBurst(limit) changes nothing
			}
			require.Equal(t, want == nil, cerr == nil, "%v: Validate says %v, the constructor %v", c, want, cerr)
			if cerr != nil {
				require.ErrorIs(t, cerr, hotlimit.ErrInvalidConfig)
			}
		}
		var now atomic.Int64
		lim, err := service.NewLimiter(c, hotlimit.WithClock(now.Load))
		if verr != nil {
			require.ErrorIs(t, verr, hotlimit.ErrInvalidConfig)
			require.Error(t, err, "%v: Validate refuses it (%v), NewLimiter must too", c, verr)
			require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			return
		}
		require.NoError(t, err, "%v: Validate accepts it", c)
		capacity, limitOf := c.Capacity(), c.Limit
		if c.Algorithm == hotlimit.Unlimited {
			capacity, limitOf = math.MaxInt, math.MaxInt
		}
		b, ok := lim.(hotlimit.Burster)
		require.True(t, ok, "%v: every limiter of this module says its burst", c)
		assert.Equal(t, capacity, b.Burst(), "%v: Burst", c)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: limitOf, Remaining: capacity}, lim.Take("k", 0), "%v: a fresh key", c)
		if c.Algorithm == hotlimit.Unlimited {
			assert.True(t, lim.Take("k", math.MaxInt).Allowed, "%v", c)
			return
		}
		d := lim.Take("k", capacity)
		assert.True(t, d.Allowed, "%v: Take(capacity) of a fresh key: %+v", c, d)
		assert.Zero(t, d.Remaining, "%v: Take(capacity) of a fresh key: %+v", c, d)
		assert.Equal(t, limitOf, d.Limit, "%v: Take(capacity) of a fresh key: %+v", c, d)
		d = lim.Take("k", 1)
		assert.False(t, d.Allowed, "%v: one more, at the same instant: %+v", c, d)
		assert.Positive(t, d.RetryAfter, "%v: one more, at the same instant: %+v", c, d)
		d = lim.Take("fresh", capacity+1)
		assert.False(t, d.Allowed, "%v: Take(capacity+1): %+v", c, d)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "%v: Take(capacity+1): %+v", c, d)
	})
}
