package redislimit_test

import (
	"context"
	"fmt"
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

// TestLeaseReportCountsTheLease: Take(key, 0) on an instance that holds a
// live lease of key reports as Remaining what Redis has left plus what the
// lease has left, as the call that granted the lease did: what this
// instance can still admit, so that a report of 0 is never followed by a
// request that passes. Once the lease has expired, Redis's alone, which
// the report's own call has given the lease's leftovers back to.
func TestLeaseReportCountsTheLease(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix(a.String() + ":")
			const ttl = time.Second
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			d := take(t, leased, "k", 1)
			require.True(t, d.Allowed)
			require.Equal(t, c.Limit-1, d.Remaining, "the granting call: Redis's 4 and the lease's 5")
			for range c.Limit - 1 - size {
				require.True(t, take(t, other, "k", 1).Allowed)
			}
			require.Zero(t, take(t, other, "k", 0).Remaining, "Redis has nothing left")
			assert.Equal(t, size, take(t, leased, "k", 0).Remaining, "the leasing instance can admit its lease")
			assert.True(t, take(t, leased, "k", 1).Allowed, "and does")
			assert.Equal(t, size-1, take(t, leased, "k", 0).Remaining)
			now.Add(int64(ttl)) // the lease expires
			d = take(t, leased, "k", 0)
			assert.Equal(t, take(t, other, "k", 0).Remaining, d.Remaining,
				"an expired lease is not reported: its leftovers are back in Redis")
		})
	}
}

// TestLeaseDenialCountsTheLease: a request larger than what key's live
// lease has left goes to Redis; when Redis denies it, or admits it without
// granting a new lease (it had exactly the request left), the lease stays
// live, and the decision's Remaining counts what it has left, as a report
// does: a decision of Remaining 0 is never followed by a request that
// passes. So does a denial by the failure policy while Redis is down.
func TestLeaseDenialCountsTheLease(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix("denial" + a.String() + ":")
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, time.Hour),
				redislimit.WithFailPolicy(redislimit.FailClosed))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
			require.Equal(t, 4, take(t, other, "k", 0).Remaining, "Redis has 4 left")

			d := take(t, leased, "k", size+1)
			assert.False(t, d.Allowed, "more than the lease and Redis have")
			assert.Equal(t, 4+size, d.Remaining, "Redis's 4 and the lease's 5")

			d = take(t, leased, "k", 2)
			require.True(t, d.Allowed, "from the lease")
			require.Equal(t, size-2, d.Remaining)
			d = take(t, leased, "k", 4)
			require.True(t, d.Allowed, "Redis's last 4, none left to lease")
			assert.Equal(t, size-2, d.Remaining, "Redis's 0 and the lease's 3")
			passed := 0
			for take(t, leased, "k", 1).Allowed {
				passed++
			}
			assert.Equal(t, size-2, passed, "the lease's 3 pass")
		})
	}
	t.Run("Redis down", func(t *testing.T) {
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
		var now atomic.Int64
		now.Store(int64(time.Hour))
		leased := newLimiter(t, newClient(t, srv), c, hotlimit.WithClock(now.Load), redislimit.WithLease(size, time.Hour),
			redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(exactTimeout), redislimit.WithBatch(0, 0))
		require.True(t, take(t, leased, "down", 1).Allowed, "1 taken, 5 leased")
		srv.Kill()
		d, err := leased.TakeContext(t.Context(), "down", size+1)
		assert.Error(t, err, "Redis is down")
		assert.False(t, d.Allowed, "FailClosed")
		assert.Equal(t, size, d.Remaining, "the lease's 5, which it spends through the outage")
		assert.True(t, take(t, leased, "down", size).Allowed)
	})
}

// TestLeaseSpendRefund: a request spent from a lease was taken in Redis
// when the lease was granted; its receipt names that time, and a Refund
// gives it back to Redis, not to the lease, once: after it, the instances
// together admit exactly the limit, less the one request that passed.
func TestLeaseSpendRefund(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix("refund" + a.String() + ":")
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, time.Hour))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			d, granted := leased.TakeReceipt("k", 1)
			require.True(t, d.Allowed, "1 taken, 5 leased")
			d, r := leased.TakeReceipt("k", 1)
			require.True(t, d.Allowed, "from the lease")
			assert.Equal(t, hotlimit.Receipt{N: 1, At: granted.At}, r, "taken in Redis with the lease")
			leased.Refund("k", r)
			assert.Equal(t, c.Limit-size, take(t, other, "k", 0).Remaining, "back in Redis: it counts the first request and the lease")
			assert.EqualValues(t, size-1, redislimit.LeaseLeft(leased, "k"), "not in the lease")
			passed := 1
			for range 2 * c.Limit {
				if take(t, leased, "k", 1).Allowed {
					passed++
				}
				if take(t, other, "k", 1).Allowed {
					passed++
				}
			}
			assert.Equal(t, c.Limit, passed, "the limit, counting the refunded request once")
		})
	}
}

// grantAfter is a go-redis hook that orders two script calls on key sent
// by themselves: the one that asks for a lease (ARGV 7, extra, positive)
// waits, once it is about to be sent, until Redis has run the other (a
// take or report without extra), whose answer is then held until release
// is closed (or its context ends). claiming is closed when the lease's
// call is about to be sent, ran once the other's answer is in.
type grantAfter struct {
	key                    string
	claiming, ran, release chan struct{}
	claimOnce, ranOnce     atomic.Bool
}

func (h *grantAfter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *grantAfter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 12 || args[3] != h.key || fmt.Sprint(args[11]) != "0" {
			return next(ctx, cmd) // another key, or a give-back
		}
		if fmt.Sprint(args[10]) != "0" {
			if h.claimOnce.CompareAndSwap(false, true) {
				close(h.claiming)
				select {
				case <-h.ran:
				case <-ctx.Done(): // the limiter's timeout: the test has failed
					return ctx.Err()
				}
			}
			return next(ctx, cmd)
		}
		err := next(ctx, cmd)
		if h.ranOnce.CompareAndSwap(false, true) {
			close(h.ran)
			select {
			case <-h.release:
			case <-ctx.Done():
			}
		}
		return err
	}
}

func (h *grantAfter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeaseGrantedDuringCallNotCountedTwice: a call on key that does not
// take a lease (another call holds key's claim) is answered by Redis
// before the concurrent call that holds the claim takes key's lease, and
// reads key's lease only after that lease is installed. Redis's Remaining
// in its answer still holds the lease's requests, so it must not add the
// lease on top: that counted the lease twice, a Remaining above the burst
// under a frozen clock (14 and 15 of a burst of 10) that no instant ever
// had, and that the instance could not admit.
func TestLeaseGrantedDuringCallNotCountedTwice(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, tc := range []struct {
		name string
		n    int
	}{{"allowed", 1}, {"denied", 11}, {"report", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Hour}
			clocked := frozenClock()
			client := newClient(t, srv)
			prefix := redislimit.WithPrefix("twice" + tc.name + ":")
			leased := newExact(t, client, c, clocked, prefix, redislimit.WithLease(size, time.Hour), redislimit.WithBatch(0, 0))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)
			take(t, leased, "warm", 0) // loads the script: each call below is one EVALSHA
			h := &grantAfter{key: leased.RedisKey("k"), claiming: make(chan struct{}), ran: make(chan struct{}), release: make(chan struct{})}
			client.AddHook(h)

			granting := make(chan hotlimit.Decision, 1)
			go func() {
				d, _ := leased.TakeContext(context.Background(), "k", 1)
				granting <- d
			}()
			await(t, h.claiming, "the call that takes the lease")
			racing := make(chan hotlimit.Decision, 1)
			go func() {
				d, _ := leased.TakeContext(context.Background(), "k", tc.n)
				racing <- d
			}()
			await(t, h.ran, "the call that takes no lease")
			taken := 0 // what the racing call took in Redis
			if tc.n >= 1 && tc.n <= c.Limit {
				taken = tc.n
			}
			g := <-granting
			require.True(t, g.Allowed, "1 taken, 5 leased")
			require.Equal(t, c.Limit-1-taken, g.Remaining, "the granting call: Redis's and the lease's 5")
			close(h.release)
			d := <-racing

			assert.Equal(t, tc.n <= c.Limit, d.Allowed)
			assert.Equal(t, c.Limit-taken, d.Remaining, "Redis's answer, before the lease was taken from it")
			assert.LessOrEqual(t, d.Remaining, c.Limit, "never more than the burst, under a frozen clock")
			require.Equal(t, c.Limit-1-size-taken, take(t, other, "k", 0).Remaining, "Redis counts both calls and the lease")
			assert.Equal(t, c.Limit-1-taken, take(t, leased, "k", 0).Remaining, "Redis's and the lease's, read at once")
		})
	}
}

// TestLeaseFallbackEventsCountTheLease: while Redis is down, a decision of
// the failure policy counts in Remaining what key's live lease has left,
// and the hook's Event and the observer's Fallback carry that decision,
// the one the caller got, as they say: not the policy's Remaining without
// the lease.
func TestLeaseFallbackEventsCountTheLease(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		t.Run(p.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
			hook := &hookLog{}
			obs := &fallbackLog{}
			leased := newExact(t, newClient(t, srv), c, frozenClock(), redislimit.WithPrefix(p.String()+":"),
				redislimit.WithLease(size, time.Hour), redislimit.WithFailPolicy(p), redislimit.WithBatch(0, 0),
				redislimit.WithBreaker(1, time.Hour), redislimit.WithHook(hook.add), hotlimit.WithObserver(obs))
			require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
			srv.Kill()
			t.Cleanup(srv.Restart) // for the next policy
			for _, n := range []int{0, size + 1} {
				d, err := leased.TakeContext(context.Background(), "k", n)
				require.Error(t, err, "Redis is down")
				events := hook.snapshot()
				require.NotEmpty(t, events)
				assert.Equal(t, d, events[len(events)-1].Decision, "n=%d: the hook's decision is the caller's", n)
				obs.mu.Lock()
				require.NotEmpty(t, obs.got)
				assert.Equal(t, d, obs.got[len(obs.got)-1].Decision, "n=%d: the observer's decision is the caller's", n)
				obs.mu.Unlock()
				assert.GreaterOrEqual(t, d.Remaining, size, "n=%d: the lease's 5 count", n)
			}
		})
	}
}
