package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestForeignKeyTypeIsErrReply: a key of the limiter's prefix that someone
// else wrote with another type (a hash where the scripts keep a string, a
// string where the sliding log keeps a sorted set) fails the call with an
// error wrapping ErrReply, as its doc says, together with Redis's own
// (WRONGTYPE), and the failure policy decides: FailClosed admits nothing.
func TestForeignKeyTypeIsErrReply(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		lim := newLimiter(t, client, hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Minute},
			redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(0, 0), redislimit.WithTimeout(exactTimeout))
		k := lim.RedisKey("k")
		if a == hotlimit.SlidingLog {
			require.NoError(t, client.Set(ctx, k, "foreign", 0).Err())
		} else {
			require.NoError(t, client.HSet(ctx, k, "foreign", "1").Err())
		}
		d, err := lim.TakeContext(ctx, "k", 1)
		assert.ErrorIs(t, err, redislimit.ErrReply, "%v", a)
		assert.ErrorContains(t, err, "WRONGTYPE", "%v: Redis's own error is kept", a)
		assert.Equal(t, "error", redislimit.Reason(err), "%v", a)
		assert.False(t, d.Allowed, "%v", a)
	}
}

// TestForeignKeyTypeCloseIsErrReply: Close's error for a lease it could not
// give back because someone else wrote the key with another type since
// wraps ErrReply and Redis's own (WRONGTYPE), as a take's does.
func TestForeignKeyTypeCloseIsErrReply(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow} {
		lim, err := redislimit.New(client, hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Minute},
			redislimit.WithLease(5, time.Minute), redislimit.WithBreaker(0, 0), redislimit.WithTimeout(exactTimeout))
		require.NoError(t, err)
		d, err := lim.TakeContext(ctx, "k", 1)
		require.NoError(t, err, "%v", a)
		require.True(t, d.Allowed, "%v", a)
		require.Equal(t, 1, lim.Len(), "%v: the take leased", a)
		k := lim.RedisKey("k")
		require.NoError(t, client.Del(ctx, k).Err())
		require.NoError(t, client.HSet(ctx, k, "foreign", "1").Err())
		err = lim.Close()
		assert.ErrorIs(t, err, redislimit.ErrReply, "%v", a)
		assert.ErrorContains(t, err, "WRONGTYPE", "%v: Redis's own error is kept", a)
	}
}

// TestForeignKeyTypeOpensNoBreaker: calls for a key of the prefix that
// someone else wrote with another type fail, each with ErrReply, however
// many in a row, but do not open the breaker: Redis answered them, and the
// other keys are still decided by Redis rather than by the failure policy.
func TestForeignKeyTypeOpensNoBreaker(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	lim := newLimiter(t, client, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(2, time.Hour), redislimit.WithTimeout(exactTimeout))
	require.NoError(t, client.HSet(ctx, lim.RedisKey("foreign"), "foreign", "1").Err())
	for i := range 5 {
		d, err := lim.TakeContext(ctx, "foreign", 1)
		assert.ErrorIs(t, err, redislimit.ErrReply, "call %d", i)
		assert.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "call %d", i)
		assert.False(t, d.Allowed, "call %d", i)
	}
	d, err := lim.TakeContext(ctx, "k", 1)
	require.NoError(t, err, "another key is decided by Redis")
	assert.True(t, d.Allowed)
	assert.Equal(t, 4, d.Remaining)
}

// TestForeignStateOutOfRangeIsFresh: a value of the scripts' layout that
// no limiter of the key's Config writes (someone else's value under the
// limiter's prefix: tokens below zero or above the burst, a count above
// the limit or below zero, a number beyond exact arithmetic, a sliding
// counter's state with two fields, a "-" where the key's making time is
// kept, a window index whose window starts beyond exact arithmetic, either
// way, near it or so far that its TTL would not fit SET's) is taken for a
// fresh key's, as one of
// another layout is: the first take is decided as a fresh key's and
// overwrites it, without a script error, a negative Remaining or
// ResetAfter, or more admitted than the burst.
func TestForeignStateOutOfRangeIsFresh(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const now = int64(time.Hour)
	const huge = "999999999999999999999" // beyond 2^53: not exact in Lua
	window := int64(time.Minute)
	idx := fmt.Sprint(now / window)
	at := fmt.Sprint(now)
	cap := fmt.Sprint(5 * window)
	capPlus := fmt.Sprint(5*window + 1)
	// window indexes whose windows start at 2^52 ticks or beyond, or as
	// far the other way: no clock this limiter reads gets there
	const exact = int64(1) << 52
	pastExact, farPast := fmt.Sprint(exact/window+1), "1000000000000000"
	beforeExact := fmt.Sprint(-exact/window - 1)
	foreign := map[hotlimit.Algorithm][]string{
		hotlimit.TokenBucket: {"-5 " + at, capPlus + " " + at, "-1 " + at + " " + at, cap + " " + huge, huge + " " + at, cap + " " + at + " " + huge, cap + " " + at + " -"},
		hotlimit.GCRA:        {"-5 " + at, capPlus + " " + at, "-1 " + at + " " + at, cap + " " + huge, huge + " " + at, cap + " " + at + " " + huge, cap + " " + at + " -"},
		hotlimit.FixedWindow: {idx + " 6", idx + " 100 " + at, huge + " 1", idx + " " + huge, idx + " 1 -",
			pastExact + " 1", farPast + " 1", beforeExact + " 1"},
		hotlimit.SlidingCounter: {
			idx + " -100 0", idx + " 0 -1", idx + " 0 6", idx + " 100 0 " + at, huge + " 0 1", idx + " " + huge + " 0",
			idx + " 0", "-5 0", idx + " 0 1 -",
			pastExact + " 0 1", farPast + " 1 1", beforeExact + " 0 1",
		},
	}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter} {
		lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Minute},
			hotlimit.WithClock(func() int64 { return now }), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(1, time.Hour))
		for i, v := range foreign[a] {
			fresh := fmt.Sprintf("fresh%d", i)
			want := take(t, lim, fresh, 1)
			require.True(t, want.Allowed, "%v: a fresh key", a)
			key := fmt.Sprintf("foreign%d", i)
			require.NoError(t, client.Set(ctx, lim.RedisKey(key), v, 0).Err())
			d, err := lim.TakeContext(ctx, key, 1)
			assert.NoError(t, err, "%v, %q", a, v)
			assert.Equal(t, want, d, "%v, %q: a fresh key's decision", a, v)
			stored, err := client.Get(ctx, lim.RedisKey(key)).Result()
			require.NoError(t, err)
			wantStored, err := client.Get(ctx, lim.RedisKey(fresh)).Result()
			require.NoError(t, err)
			assert.Equal(t, wantStored, stored, "%v, %q: overwritten with a fresh key's state", a, v)
		}
	}
}

// TestForeignSlidingLogIsFresh: a sorted set under a sliding log's key
// that no limiter of its Config keeps (more members than the limit, a
// newest member not of the script's form, a time beyond exact arithmetic)
// is taken for a fresh key's, as the other algorithms take a foreign
// value: the first take is decided as a fresh key's and replaces it,
// without a script error (which would count as Redis failing, and open
// the breaker for every key) or a negative Remaining.
func TestForeignSlidingLogIsFresh(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const now = int64(time.Hour)
	ours := func(at int64, seq int) redis.Z {
		return redis.Z{Score: float64(at), Member: fmt.Sprintf("%d:%010d", at, seq)}
	}
	var many []redis.Z
	for i := range 7 {
		many = append(many, ours(now-int64(i+1), 0))
	}
	foreign := [][]redis.Z{
		{{Score: float64(now), Member: "foo"}},                 // the newest is not the script's
		{{Score: float64(now + 10), Member: "foo"}},            // ... nor at its score
		{ours(now-5, 0), {Score: float64(now), Member: "1:1"}}, // a member whose time is not its score
		{{Score: 1e30, Member: "1e30:1"}},                      // beyond exact
		{{Score: math.Inf(1), Member: "inf:0"}},
		many, // more than the limit
	}
	lim := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Minute},
		hotlimit.WithClock(func() int64 { return now }), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(1, time.Hour))
	for i, zs := range foreign {
		fresh := fmt.Sprintf("fresh%d", i)
		want := take(t, lim, fresh, 1)
		require.True(t, want.Allowed, "a fresh key")
		key := fmt.Sprintf("foreign%d", i)
		require.NoError(t, client.ZAdd(ctx, lim.RedisKey(key), zs...).Err())
		d, err := lim.TakeContext(ctx, key, 1)
		assert.NoError(t, err, "%v", zs)
		assert.Equal(t, want, d, "%v: a fresh key's decision", zs)
		stored, err := client.ZRangeWithScores(ctx, lim.RedisKey(key), 0, -1).Result()
		require.NoError(t, err)
		wantStored, err := client.ZRangeWithScores(ctx, lim.RedisKey(fresh), 0, -1).Result()
		require.NoError(t, err)
		assert.Equal(t, wantStored, stored, "%v: replaced by a fresh key's log", zs)
	}

	// A foreign member below the newest and outside the window is never
	// read: the key is decided as its own log alone says.
	require.NoError(t, client.ZAdd(ctx, lim.RedisKey("own"), ours(now-5, 0)).Err())
	want := take(t, lim, "own", 1)
	require.NoError(t, client.ZAdd(ctx, lim.RedisKey("below"), redis.Z{Score: -1e30, Member: "x"}, ours(now-5, 0)).Err())
	d, err := lim.TakeContext(ctx, "below", 1)
	require.NoError(t, err)
	assert.Equal(t, want, d, "a foreign member below the window")
}
