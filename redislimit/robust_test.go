package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundAfterStateLost: a receipt taken before Redis lost the key's state
// (FLUSHALL, a restart, an eviction) gives nothing back to the key that a
// later take created: that key never counted the receipt's requests, and a
// refund to it would admit more than a fresh key's quota.
func TestRefundAfterStateLost(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
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
// for every algorithm, on the caller's clock (near its origin, and weeks
// ahead of Redis's) and on Redis's: the key
// expires (no key is kept forever), and not before the key is back to a
// fresh key's quota (a key that expires while it still counts would
// over-admit). The bound is ResetAfter, as the call reports it, up to
// ResetAfter plus a window and the scripts' second of margin, and two
// milliseconds: the one the TTL is rounded up to, and the one by which
// Redis's millisecond clock, which the TTL counts down by, may read behind
// the microseconds of its TIME at the call that set it.
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
		assert.LessOrEqual(t, ttl, d.ResetAfter+window+time.Second+2*time.Millisecond, "%s: the key outlives its state", what)
	}
	for _, clock := range []string{"fake", "far", "redis"} {
		for _, a := range algorithms {
			t.Run(clock+"/"+a.String(), func(t *testing.T) {
				require.NoError(t, client.FlushAll(ctx).Err())
				var now atomic.Int64
				now.Store(int64(time.Hour) + 1)
				var opts []hotlimit.Option
				switch clock {
				case "far": // ahead of Redis's clock by weeks
					now.Store(redislimit.ClockRange - int64(10*time.Minute))
					opts = append(opts, hotlimit.WithClock(now.Load))
				case "fake":
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
// n are denied for good (but on a 32-bit int, where math.MaxInt is the
// limit itself: that n is the whole burst, denied until it refills). Keys with spaces, braces, NUL and invalid UTF-8,
// an empty key and a key of 1 MiB each keep a state of their own.
//
// The keys' TTLs are real time, a second past the fake time to a full
// quota, which with the tiny windows is a nanosecond: each key's TTL is
// removed once its last take wrote it, so that counting the Redis keys at
// the end does not race their expiry on a slow machine. The client waits
// for a slow answer (the 1 MiB key, the 65536 logged times) rather than
// send the take again after its read timeout, which would count it twice.
func TestExtremeValuesAndKeys(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, ReadTimeout: exactTimeout, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()
	const big = min(1<<52-1, math.MaxInt) // the largest exact limit, on a 64-bit int
	cfgs := []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: big, Window: time.Nanosecond},
		{Algorithm: hotlimit.GCRA, Limit: big, Window: time.Nanosecond},
		{Algorithm: hotlimit.FixedWindow, Limit: big, Window: time.Nanosecond << 50},
		{Algorithm: hotlimit.SlidingCounter, Limit: min(1<<51-2, math.MaxInt), Window: 2 * time.Nanosecond},
		{Algorithm: hotlimit.SlidingLog, Limit: 1 << 16, Window: time.Hour},
		{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Nanosecond << 50},
		{Algorithm: hotlimit.SlidingCounter, Limit: 1, Window: time.Nanosecond << 50},
	}
	keys := []string{"a b", "a", "{a}", "a}", "}{", "\x00\xff\n", "", strings.Repeat("k", 1<<20)}
	for _, c := range cfgs {
		t.Run(c.String(), func(t *testing.T) {
			t.Cleanup(func() { _ = client.FlushAll(ctx).Err() }) // the next Config counts its own keys, even after a failure
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
				require.True(t, client.Persist(ctx, lim.RedisKey(k)).Val(), "key %d: its Redis key, written with a TTL", i)
				d = take(t, lim, k, 1)
				assert.False(t, d.Allowed, "key %d: more than its burst", i)
				ns := []int{math.MaxInt, -1, math.MinInt}
				if c.Limit < math.MaxInt {
					ns = append(ns, c.Limit+1) // none beyond math.MaxInt, a 32-bit int's limit of big
				}
				for _, n := range ns {
					d := take(t, lim, k, n)
					assert.False(t, d.Allowed, "key %d n=%d", i, n)
					if n == c.Limit {
						// math.MaxInt on a 32-bit int: the whole burst, which
						// refills, not beyond it.
						assert.Positive(t, d.RetryAfter, "key %d n=%d", i, n)
						assert.Less(t, d.RetryAfter, hotlimit.Never, "key %d n=%d", i, n)
						continue
					}
					assert.Equal(t, hotlimit.Never, d.RetryAfter, "key %d n=%d", i, n)
				}
			}
			n, err := client.DBSize(ctx).Result()
			require.NoError(t, err)
			assert.Equal(t, int64(len(keys)), n, "one Redis key per key")
		})
	}
}

// TestTakeAllAfterScriptFlush: SCRIPT FLUSH, then FLUSHALL, between TakeAll
// calls of limiters of every algorithm: each call is decided by Redis (the
// NOSCRIPT replies in the pipeline are run again), and after FLUSHALL each
// key has exactly a fresh key's quota, no more.
func TestTakeAllAfterScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	const limit = 3
	var lims []*redislimit.Limiter
	for _, a := range algorithms {
		lims = append(lims, newExact(t, client, hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute}, hotlimit.WithClock(clock.Load)))
	}
	round := func(what string) []bool {
		takes := make([]redislimit.Take, len(lims))
		for i, lim := range lims {
			takes[i] = redislimit.Take{Limiter: lim, Key: "k", N: 1}
		}
		redislimit.TakeAll(ctx, takes)
		allowed := make([]bool, len(takes))
		for i, tk := range takes {
			require.NoError(t, tk.Err, "%s: %v", what, lims[i].Config().Algorithm)
			allowed[i] = tk.Decision.Allowed
		}
		return allowed
	}
	all := func(v bool) []bool { return []bool{v, v, v, v, v} }
	require.Len(t, lims, len(all(true)))
	assert.Equal(t, all(true), round("first"))
	require.NoError(t, client.ScriptFlush(ctx).Err())
	assert.Equal(t, all(true), round("after SCRIPT FLUSH"))
	require.NoError(t, client.FlushAll(ctx).Err())
	require.NoError(t, client.ScriptFlush(ctx).Err())
	for i := range limit {
		assert.Equal(t, all(true), round(fmt.Sprintf("after FLUSHALL, take %d", i)))
	}
	assert.Equal(t, all(false), round("beyond a fresh key's quota"))
}

// TestRedisRefusesWrites: a read-only replica (READONLY), a server whose
// password changed, for a client without one (NOAUTH, or a protocol error
// for a call of many arguments) or with the old one (WRONGPASS), and one
// out of memory without eviction (OOM) each fail the call with an error
// that says which (ErrReadOnly, ErrAuth, ErrOutOfMemory, wrapping Redis's),
// and the failure policy's decision: FailClosed admits nothing.
func TestRedisRefusesWrites(t *testing.T) {
	ctx := context.Background()
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute}
	check := func(t *testing.T, client *redis.Client, want error) {
		t.Helper()
		for _, a := range algorithms {
			c := c
			c.Algorithm = a
			lim := newLimiter(t, client, c, redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(0, 0), redislimit.WithTimeout(exactTimeout))
			d, err := lim.TakeContext(ctx, "k", 1)
			require.Error(t, err, "%v", a)
			assert.ErrorIs(t, err, want, "%v", a)
			assert.Equal(t, "error", redislimit.Reason(err))
			assert.False(t, d.Allowed, "%v", a)
		}
	}
	t.Run("READONLY", func(t *testing.T) {
		primary := redistest.Start(t)
		replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(portOf(t, primary.Addr)))
		check(t, newClient(t, replica), redislimit.ErrReadOnly)
	})
	t.Run("NOAUTH", func(t *testing.T) {
		srv := redistest.Start(t)
		client := newClient(t, srv)
		lim := newExact(t, client, c)
		require.True(t, lim.Allow("k"))
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { _ = admin.Close() })
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "changed").Err())
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal").Err())
		check(t, client, redislimit.ErrAuth)
	})
	t.Run("WRONGPASS", func(t *testing.T) {
		srv := redistest.Start(t)
		require.NoError(t, srv.Client().ConfigSet(ctx, "requirepass", "old").Err())
		client := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "old", ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		lim := newExact(t, client, c)
		require.True(t, lim.Allow("k"))
		admin := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "old"})
		t.Cleanup(func() { _ = admin.Close() })
		require.NoError(t, admin.ConfigSet(ctx, "requirepass", "new").Err())
		require.NoError(t, admin.ClientKillByFilter(ctx, "TYPE", "normal").Err())
		check(t, client, redislimit.ErrAuth)
	})
	t.Run("OOM", func(t *testing.T) {
		srv := redistest.Start(t, "--maxmemory", "1mb", "--maxmemory-policy", "noeviction")
		client := newClient(t, srv)
		require.Error(t, client.Set(ctx, "ballast", strings.Repeat("x", 2<<20), 0).Err(), "the server must be out of memory")
		check(t, client, redislimit.ErrOutOfMemory)
	})
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(p)
	require.NoError(t, err)
	return n
}

// TestClientPauseBreaker: under CLIENT PAUSE, calls time out (Reason
// "timeout") and get the failure policy's decision; after two, the
// breaker is open and calls fail at once with ErrBreakerOpen. Once the
// pause ends, Redis decides again, and the calls that timed out, which
// Redis runs when the pause ends, have only taken requests: Redis never
// admits more than the limit in all. The first request, which dials and
// loads the script, goes through a limiter of its own on the same client,
// whose timeout a loaded machine cannot pass, not through the one of 100 ms.
func TestClientPauseBreaker(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	admin := newClient(t, srv)
	ctx := context.Background()
	const limit = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Hour}
	lim := newLimiter(t, client, c, frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(100*time.Millisecond),
		redislimit.WithBreaker(2, time.Second))
	require.True(t, take(t, newExact(t, client, c, frozenClock()), "k", 1).Allowed)
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 3000, "ALL").Err())
	for i := range 2 {
		d, err := lim.TakeContext(ctx, "k", 1)
		require.Error(t, err, "call %d", i)
		assert.Equal(t, "timeout", redislimit.Reason(err), "call %d: %v", i, err)
		assert.False(t, d.Allowed, "call %d: FailClosed", i)
	}
	d, err := lim.TakeContext(ctx, "k", 1)
	assert.ErrorIs(t, err, redislimit.ErrBreakerOpen)
	assert.False(t, d.Allowed)
	// the pause ends by itself (CLIENT UNPAUSE would wait for it too)

	passed := 1
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := lim.TakeContext(ctx, "k", 1)
		if err == nil {
			if !d.Allowed {
				break
			}
			passed++
			continue
		}
		require.True(t, time.Now().Before(deadline), "Redis not deciding again: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	assert.LessOrEqual(t, passed, limit, "Redis admitted more than the limit")
	assert.GreaterOrEqual(t, passed, limit-2, "only the two calls that timed out may have taken in Redis")
}

// TestLeaseGiveBackAfterStateLost: a lease granted before Redis lost the
// key's state gives its unspent requests back, when it ends, to nothing:
// not to the key another instance made afresh since, which never counted
// them.
func TestLeaseGiveBackAfterStateLost(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			leased := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load), redislimit.WithLease(2, time.Hour))
			other := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load))
			d := take(t, leased, "k", 1)
			require.True(t, d.Allowed)
			require.Equal(t, 1, leased.Len(), "a lease is held")
			require.NoError(t, srv.Client().FlushAll(ctx).Err())
			clock.Add(int64(time.Millisecond))
			for i := range c.Limit {
				require.True(t, take(t, other, "k", 1).Allowed, "fresh key, request %d", i)
			}
			require.NoError(t, leased.Close(), "the lease's give-back")
			assert.False(t, take(t, other, "k", 1).Allowed, "the lease gave back requests the fresh key never counted")
		})
	}
}

// TestEvictedKeyIsFresh: on a Redis at maxmemory that evicts (allkeys-lru),
// a key evicted while it counted is decided as a fresh key, exactly: its
// quota and no more, and a receipt of a take before the eviction gives
// nothing back.
func TestEvictedKeyIsFresh(t *testing.T) {
	srv := redistest.Start(t, "--maxmemory", "4mb", "--maxmemory-policy", "allkeys-lru")
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			require.NoError(t, client.FlushAll(ctx).Err())
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			c := hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Minute}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load))
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			require.Equal(t, int64(1), client.DBSize(ctx).Val())
			ballast := strings.Repeat("x", 64<<10)
			for i := 0; ; i++ {
				require.Less(t, i, 10000, "the key was never evicted")
				require.NoError(t, client.Set(ctx, fmt.Sprintf("ballast:%d", i), ballast, 0).Err())
				n, err := client.Keys(ctx, "hotlimit:*").Result()
				require.NoError(t, err)
				if len(n) == 0 {
					break
				}
			}
			clock.Add(int64(time.Millisecond))
			for i := range c.Limit {
				require.True(t, take(t, lim, "k", 1).Allowed, "fresh key, request %d", i)
			}
			lim.Refund("k", r)
			assert.False(t, take(t, lim, "k", 1).Allowed, "more than a fresh key's quota")
		})
	}
}

// TestClockBehindNeverOverAdmits: two instances share keys, one whose
// clock ([hotlimit.WithClock]) is 30 s behind the other's, both frozen,
// taking in turn after the instance ahead made the key, with a lease where
// the algorithm has one: together they never admit more than the limit (a
// clock behind a key's time refills nothing and opens no new window). The
// other way round, the instance ahead sees 30 s pass since the key's time
// and refills them: with WithClock, every instance must read one clock;
// Redis's TIME, the default, is one.
func TestClockBehindNeverOverAdmits(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			const limit = 10
			c := hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute}
			var ahead, behind atomic.Int64
			ahead.Store(int64(time.Hour) + 1)
			behind.Store(ahead.Load() - int64(30*time.Second))
			var lease []hotlimit.Option
			if redislimit.CanLease(a) {
				lease = append(lease, redislimit.WithLease(3, time.Hour))
			}
			lims := []*redislimit.Limiter{
				newExact(t, newClient(t, srv), c, append([]hotlimit.Option{hotlimit.WithClock(ahead.Load)}, lease...)...),
				newExact(t, newClient(t, srv), c, append([]hotlimit.Option{hotlimit.WithClock(behind.Load)}, lease...)...),
			}
			passed := []int{0, 0}
			for i := range 4 * limit {
				if take(t, lims[i%2], "k", 1).Allowed {
					passed[i%2]++
				}
			}
			assert.LessOrEqual(t, passed[0]+passed[1], limit, "ahead, behind: %v", passed)
			assert.Positive(t, passed[0], "the instance ahead")
		})
	}
}
