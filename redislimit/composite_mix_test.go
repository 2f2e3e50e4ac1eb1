package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestCompositeOfRedisAndMemory: a composite.Limiter of a Redis limiter and
// an in-memory one, each on its own clock (Redis's TIME, the process's
// monotonic clock), as the package documentation describes. Its Take is all
// or nothing: a request the memory child denies is given back to Redis
// with Redis's own receipt. Its receipt holds the earliest of the two
// times, the process clock's, from before the Redis key was made: a Refund
// of it gives the memory child its request back, and Redis nothing (never
// more), so the request stays counted in Redis until it refills.
func TestCompositeOfRedisAndMemory(t *testing.T) {
	srv := redistest.Start(t)
	onRedis := newExact(t, newClient(t, srv), hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Hour})
	inMemory, err := service.NewLimiter(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Hour})
	require.NoError(t, err)
	both, err := composite.New(onRedis, inMemory)
	require.NoError(t, err)

	require.True(t, both.Allow("k"))
	require.True(t, both.Allow("k"))
	assert.False(t, both.Allow("k"), "the memory child's limit")
	assert.Equal(t, 98, take(t, onRedis, "k", 0).Remaining, "the denial was given back to Redis")

	d, r := both.TakeReceipt("j", 1)
	require.True(t, d.Allowed)
	assert.Equal(t, 99, take(t, onRedis, "j", 0).Remaining)
	both.Refund("j", r)
	assert.Equal(t, 2, inMemory.Take("j", 0).Remaining, "the memory child got its request back")
	assert.Equal(t, 99, take(t, onRedis, "j", 0).Remaining, "Redis, on another clock, got nothing back")
}

// TestCompositeNeverOfARedisChild: a Redis limiter says its burst
// (hotlimit.Burster), so a composite denies with Never, at once, a request
// above it that a memory child asked first would only have delayed; Redis
// is not asked for it.
func TestCompositeNeverOfARedisChild(t *testing.T) {
	srv := redistest.Start(t)
	onRedis := newExact(t, newClient(t, srv), hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Hour})
	assert.Equal(t, 3, onRedis.Burst())
	inMemory, err := service.NewLimiter(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Hour})
	require.NoError(t, err)
	both, err := composite.New(inMemory, onRedis)
	require.NoError(t, err)
	require.True(t, inMemory.Take("k", 8).Allowed)

	d := both.Take("k", 4)
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, 3, take(t, onRedis, "k", 0).Remaining, "Redis was not asked for 4")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = hotlimit.WaitN(ctx, both, "k", 4)
	assert.ErrorIs(t, err, hotlimit.ErrNeverPasses)
}

// TestAskerUnderAnEndedContextLeavesTheLocalLimiter: a composite.Asker of a
// Redis limiter, asked under a context that has ended, does not ask it: it
// could only fail, and FailLocal, its default failure policy, took each
// question from its local limiter with the zero Receipt, nothing to give
// it back by, so that two questions spent a limit of 2 there for as long
// as Redis then fails. It waits nothing, with the context's error, and the
// local limiter is as it was.
func TestAskerUnderAnEndedContextLeavesTheLocalLimiter(t *testing.T) {
	srv := redistest.Start(t)
	lim := newExact(t, newClient(t, srv), hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Hour})
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	local := func() int {
		d, err := lim.TakeContext(ended, "k", 0) // the local limiter's report
		require.ErrorIs(t, err, context.Canceled)
		return d.Remaining
	}
	require.Equal(t, 2, local())
	a := composite.NewAsker(lim, false)
	for range 3 {
		w, err := a.Ask(ended, "k", 1)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, w)
	}
	assert.Equal(t, 2, local(), "the local limiter counted nothing")
	assert.Equal(t, 2, take(t, lim, "k", 0).Remaining, "nor Redis")
}
