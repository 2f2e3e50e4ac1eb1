package redislimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestClockRangeErrorSaysReading: the error of a clock reading outside the
// scripts' range names the reading and the range, so that a logged error
// tells what the clock read, says what to do instead (no clock, so that
// Redis's TIME counts; Unix nanoseconds, which a user may pass as a wall
// clock, are out of range), and still wraps ErrClockRange. The call never
// reaches Redis, so the client's address is never dialled.
func TestClockRangeErrorSaysReading(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	for _, now := range []int64{redislimit.ClockRange + 1, -(redislimit.ClockRange + 1), 1<<62 + 7} {
		lim := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second},
			hotlimit.WithClock(func() int64 { return now }), redislimit.WithFailPolicy(redislimit.FailClosed))
		_, err := lim.TakeContext(context.Background(), "k", 1)
		require.ErrorIs(t, err, redislimit.ErrClockRange, "at %d", now)
		msg := err.Error()
		assert.Contains(t, msg, strconv.FormatInt(now, 10), "the reading")
		assert.Contains(t, msg, "["+strconv.FormatInt(-redislimit.ClockRange, 10)+", "+strconv.FormatInt(redislimit.ClockRange, 10)+"]", "the range")
		assert.Contains(t, msg, "give no hotlimit.WithClock, and Redis's TIME counts", "the remedy")
		assert.Contains(t, msg, "Unix nanoseconds do not", "the usual mistake")
	}
}
