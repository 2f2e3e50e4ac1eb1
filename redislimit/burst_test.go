package redislimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestWithBurstOfTheLimitWithoutBurst: as hotlimit.WithBurst says of every
// constructor, New takes a burst equal to the limit for an algorithm
// without a burst (fixed window, sliding log, sliding counter), as the
// in-memory limiters do, and a limiter so built decides as one without
// the option; any other burst is an error that names the option's value,
// not a Config.Burst the caller never set.
func TestWithBurstOfTheLimitWithoutBurst(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.SlidingCounter} {
		c := hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Minute}
		_, err := service.NewLimiter(c, hotlimit.WithBurst(c.Limit))
		require.NoError(t, err, "%v: in memory", a)
		lim, err := redislimit.New(client, c, hotlimit.WithBurst(c.Limit), redislimit.WithTimeout(exactTimeout))
		require.NoError(t, err, "%v", a)
		t.Cleanup(func() { _ = lim.Close() })
		assert.Equal(t, c, lim.Config(), "%v: the Config is the one given", a)
		assert.Equal(t, c.Limit, lim.Burst(), "%v", a)
		d := take(t, lim, "k", c.Limit)
		assert.True(t, d.Allowed, "%v", a)
		assert.Equal(t, hotlimit.Never, take(t, lim, "k", c.Limit+1).RetryAfter, "%v: above the limit", a)

		_, err = service.NewLimiter(c, hotlimit.WithBurst(c.Limit+2))
		require.Error(t, err, "%v: in memory", a)
		_, err = redislimit.New(client, c, hotlimit.WithBurst(c.Limit+2))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", a)
		assert.ErrorContains(t, err, "burst 7", "%v", a)
		assert.NotContains(t, err.Error(), "Config.Burst", "%v: the caller set no Config.Burst", a)
	}
}
