package redislimit_test

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundAfterStateLost: a receipt taken before Redis lost the key's state
// (FLUSHALL, a restart, an eviction) gives nothing back to the key that a
// later take created: that key never counted the receipt's requests, and a
// refund to it would admit more than a fresh key's quota. The sliding log's
// sorted set keeps no such time, and is left out.
func TestRefundAfterStateLost(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		if a == hotlimit.SlidingLog {
			continue
		}
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load))
			d, r := lim.TakeReceipt("k", 2)
			require.True(t, d.Allowed)
			require.NoError(t, client.FlushAll(ctx).Err())
			clock.Add(int64(time.Millisecond)) // the fresh key is made after the take
			for i := range c.Limit {
				require.True(t, take(t, lim, "k", 1).Allowed, "fresh key, request %d", i)
			}
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			assert.False(t, take(t, lim, "k", 1).Allowed, "a refund of a take the key never counted admitted more than a fresh key's quota")
		})
	}
}

// TestKeyTTLCoversState checks the TTL of a key after each kind of call,
// for every algorithm, on the caller's clock and on Redis's: the key
// expires (no key is kept forever), and not before the key is back to a
// fresh key's quota (a key that expires while it still counts would
// over-admit). The bound is ResetAfter, as the call reports it, up to
// ResetAfter plus a window and the scripts' second of margin (and the
// millisecond the TTL is rounded up to).
func TestKeyTTLCoversState(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const window = time.Minute
	check := func(t *testing.T, redisKey string, d hotlimit.Decision, what string) {
		t.Helper()
		ttl, err := client.PTTL(ctx, redisKey).Result()
		require.NoError(t, err)
		require.Positive(t, ttl, "%s: the key has no TTL or is gone (%v)", what, ttl)
		assert.GreaterOrEqual(t, ttl+50*time.Millisecond, d.ResetAfter, "%s: the key expires while it still counts", what)
		assert.LessOrEqual(t, ttl, d.ResetAfter+window+time.Second+time.Millisecond, "%s: the key outlives its state", what)
	}
	for _, clock := range []string{"fake", "redis"} {
		for _, a := range algorithms {
			t.Run(clock+"/"+a.String(), func(t *testing.T) {
				require.NoError(t, client.FlushAll(ctx).Err())
				var now atomic.Int64
				now.Store(int64(time.Hour) + 1)
				var opts []hotlimit.Option
				if clock == "fake" {
					opts = append(opts, hotlimit.WithClock(now.Load))
				}
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: window}
				lim := newExact(t, client, c, opts...)
				keys, err := client.Keys(ctx, "*").Result()
				require.NoError(t, err)
				require.Empty(t, keys)

				d := take(t, lim, "k", 1)
				require.True(t, d.Allowed)
				keys, err = client.Keys(ctx, "*").Result()
				require.NoError(t, err)
				require.Len(t, keys, 1)
				rk := keys[0]
				check(t, rk, d, "take")

				d, r := lim.TakeReceipt("k", 2)
				require.True(t, d.Allowed)
				require.NoError(t, lim.RefundContext(ctx, "k", r))
				check(t, rk, take(t, lim, "k", 0), "refund")
				check(t, rk, take(t, lim, "k", 0), "report")

				if redislimit.CanLease(a) {
					ll := newExact(t, client, c, append(opts, redislimit.WithLease(2, time.Second))...)
					d := take(t, ll, "l", 1)
					require.True(t, d.Allowed)
					keys, err := client.Keys(ctx, "*{l}").Result()
					require.NoError(t, err)
					require.Len(t, keys, 1)
					check(t, keys[0], take(t, lim, "l", 0), "lease")
				}
			})
		}
	}
}

// TestExtremeValuesAndKeys: at the largest limits New accepts with exact
// arithmetic (its FailLocal limiter aside, whose in-memory ranges are
// smaller), a fresh key admits exactly its burst, in one take or the last
// requests one by one, and no more; n beyond it, math.MaxInt and negative
// n are denied for good. Keys with spaces, braces, NUL and invalid UTF-8,
// an empty key and a key of 1 MiB each keep a state of their own.
func TestExtremeValuesAndKeys(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const big = 1<<52 - 1
	cfgs := []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: big, Window: time.Nanosecond},
		{Algorithm: hotlimit.GCRA, Limit: big, Window: time.Nanosecond},
		{Algorithm: hotlimit.FixedWindow, Limit: big, Window: time.Nanosecond << 50},
		{Algorithm: hotlimit.SlidingCounter, Limit: 1<<51 - 2, Window: 2 * time.Nanosecond},
		{Algorithm: hotlimit.SlidingLog, Limit: 1 << 16, Window: time.Hour},
		{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Nanosecond << 50},
		{Algorithm: hotlimit.SlidingCounter, Limit: 1, Window: time.Nanosecond << 50},
	}
	keys := []string{"a b", "a", "{a}", "a}", "}{", "\x00\xff\n", "", strings.Repeat("k", 1<<20)}
	for _, c := range cfgs {
		t.Run(c.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(1 << 40)
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
			for i, k := range keys {
				first := c.Limit - 1
				if c.Algorithm == hotlimit.SlidingLog {
					first = 1000 // a take of every logged time at once is slow, not wrong
				}
				d := take(t, lim, k, first)
				require.True(t, d.Allowed, "key %d", i)
				assert.Equal(t, c.Limit-first, d.Remaining, "key %d: a key of its own", i)
				if rest := c.Limit - first; rest > 1 {
					require.True(t, take(t, lim, k, rest-1).Allowed, "key %d", i)
				}
				require.True(t, take(t, lim, k, 1).Allowed, "key %d: the last request", i)
				d = take(t, lim, k, 1)
				assert.False(t, d.Allowed, "key %d: more than its burst", i)
				for _, n := range []int{c.Limit + 1, math.MaxInt, -1, math.MinInt} {
					d := take(t, lim, k, n)
					assert.False(t, d.Allowed, "key %d n=%d", i, n)
					assert.Equal(t, hotlimit.Never, d.RetryAfter, "key %d n=%d", i, n)
				}
			}
			n, err := client.DBSize(ctx).Result()
			require.NoError(t, err)
			assert.Equal(t, int64(len(keys)), n, "one Redis key per key")
			require.NoError(t, client.FlushAll(ctx).Err())
		})
	}
}
