package redislimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundAfterKeyLost: a receipt taken before Redis lost the key (it
// expired, a FLUSHALL, a restart of a Redis without persistence) is refunded
// afterwards, for every algorithm, sliding log included. Refunded into
// nothing, it makes no key and no capacity: the key is then a fresh key, with
// Remaining the limit (never more: no negative count) and exactly the limit
// passing. Refunded into the key made and drained since, it gives nothing
// back: the next request is denied.
func TestRefundAfterKeyLost(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := srv.Client()
	losses := []struct {
		name string
		lose func(t *testing.T, redisKey string)
	}{
		{"expired", func(t *testing.T, redisKey string) {
			require.NoError(t, admin.PExpire(ctx, redisKey, time.Millisecond).Err())
			require.Eventually(t, func() bool { return admin.Exists(ctx, redisKey).Val() == 0 },
				5*time.Second, time.Millisecond, "the key expires")
		}},
		{"FLUSHALL", func(t *testing.T, _ string) { require.NoError(t, admin.FlushAll(ctx).Err()) }},
		{"restart", func(t *testing.T, _ string) { srv.Restart() }},
	}
	for _, loss := range losses {
		for _, a := range algorithms {
			t.Run(fmt.Sprintf("%s/%v", loss.name, a), func(t *testing.T) {
				var clock atomic.Int64
				clock.Store(int64(time.Hour) + 1)
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
				lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix(loss.name+":"))
				for _, drained := range []bool{false, true} {
					key := fmt.Sprintf("k-drained=%v", drained)
					d, r := lim.TakeReceipt(key, 2)
					require.True(t, d.Allowed)
					require.Equal(t, 2, r.N)
					loss.lose(t, lim.RedisKey(key))
					clock.Add(int64(time.Millisecond)) // what comes next is after the loss
					if drained {
						for i := range c.Limit {
							require.True(t, take(t, lim, key, 1).Allowed, "the fresh key's request %d", i)
						}
					}
					require.NoError(t, lim.RefundContext(ctx, key, r), "the refund")
					left := take(t, lim, key, 0).Remaining
					if drained {
						assert.Zero(t, left, "the drained key got nothing back")
						assert.False(t, take(t, lim, key, 1).Allowed, "no request past the fresh key's quota")
						continue
					}
					assert.Equal(t, c.Limit, left, "a fresh key, no more")
					for i := range c.Limit {
						require.True(t, take(t, lim, key, 1).Allowed, "the fresh key's request %d", i)
					}
					assert.False(t, take(t, lim, key, 1).Allowed, "exactly the limit passes")
				}
			})
		}
	}
}

// TestSlidingLogReceiptClockBehind: an instance whose clock is behind the
// key's newest logged time logs its requests at that time, and its receipt
// says so (At is when they were logged, as hotlimit.Receipt defines it for a
// sliding log), so that its refund finds them and gives them back.
func TestSlidingLogReceiptClockBehind(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Minute}
	var ahead, behind atomic.Int64
	ahead.Store(int64(time.Hour) + int64(time.Second))
	behind.Store(int64(time.Hour))
	fast := newExact(t, newClient(t, srv), c, hotlimit.WithClock(ahead.Load))
	slow := newExact(t, newClient(t, srv), c, hotlimit.WithClock(behind.Load))
	require.True(t, take(t, fast, "k", 1).Allowed)
	d, r := slow.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	assert.Equal(t, hotlimit.Receipt{N: 1, At: ahead.Load()}, r, "logged at the key's newest time")
	require.NoError(t, slow.RefundContext(context.Background(), "k", r))
	assert.Equal(t, c.Limit-1, take(t, fast, "k", 0).Remaining, "the refund gave the request back")
}

// TestRefundTwiceNeverPastQuota: a receipt refunded twice (a caller bug the
// hotlimit.Refunder contract allows for), or a made-up one of more than the
// burst, never leaves a key with more than a fresh key's quota: Remaining
// stays at most the limit (no negative count) and exactly the limit passes.
func TestRefundTwiceNeverPastQuota(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("twice:"))
			d, r := lim.TakeReceipt("k", 2)
			require.True(t, d.Allowed)
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			require.NoError(t, lim.RefundContext(ctx, "k", hotlimit.Receipt{N: 1000, At: r.At}))
			assert.Equal(t, c.Limit, take(t, lim, "k", 0).Remaining, "a fresh key's quota, no more")
			for i := range c.Limit {
				require.True(t, take(t, lim, "k", 1).Allowed, "request %d", i)
			}
			assert.False(t, take(t, lim, "k", 1).Allowed, "exactly the limit passes")
		})
	}
}
