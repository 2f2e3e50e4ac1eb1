package redislimit_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// TestWithBurstNegativeIsRejected: as hotlimit.WithBurst says of every
// constructor, and as the in-memory limiters do, New rejects a negative
// burst, for every algorithm, rather than build a limiter with the limit's
// burst as if the option were not given.
func TestWithBurstNegativeIsRejected(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // New does not contact Redis
	t.Cleanup(func() { _ = client.Close() })
	for _, a := range algorithms {
		c := hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Minute}
		_, err := service.NewLimiter(c, hotlimit.WithBurst(-3))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v: in memory", a)
		lim, err := redislimit.New(client, c, hotlimit.WithBurst(-3))
		if lim != nil {
			_ = lim.Close()
		}
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", a)
		assert.ErrorContains(t, err, "burst -3", "%v", a)
	}
}
