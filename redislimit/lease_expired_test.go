package redislimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestLeaseExpiredGivenBackByNextCall: a low-rate key (3 an hour, a lease
// of 2) whose requests come further apart than the lease's ttl. Each lease
// expires unspent; the key's next call gives its leftovers back to Redis in
// the same script call that takes, so that the take sees them. Before, the
// leftovers stayed taken once Redis denied (no new lease replaced the
// expired one): one request passed, then the key was denied for the hour.
func TestLeaseExpiredGivenBackByNextCall(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 50 * time.Millisecond
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Hour}
			var clock atomic.Int64
			clock.Store(3 * int64(time.Hour))
			clocked := hotlimit.WithClock(clock.Load)
			prefix := redislimit.WithPrefix("expired" + a.String() + ":")
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(2, ttl))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			for i, step := range []struct {
				allowed   bool
				remaining int
			}{
				{true, 2},  // 1 taken, 2 leased
				{true, 1},  // the lease's 2 back, 1 taken, 1 leased
				{true, 0},  // the lease's 1 back, 1 taken, none left to lease
				{false, 0}, // 3 taken, 3 passed: the limit
				{false, 0},
			} {
				clock.Add(int64(2 * ttl)) // the lease, if any, has expired
				d, r := leased.TakeReceipt("k", 1)
				assert.Equal(t, step.allowed, d.Allowed, "step %d", i)
				assert.Equal(t, step.remaining, d.Remaining, "step %d", i)
				if d.Allowed {
					assert.Equal(t, clock.Load(), r.At, "step %d: taken in Redis, not from the expired lease", i)
				}
				assert.Zero(t, take(t, other, "k", 0).Remaining, "step %d: Redis has nothing left", i)
			}
		})
	}
}

// expiredHold is a go-redis hook that holds the first script call on key
// that both takes (ARGV 1, n, positive) and gives back (ARGV 8 positive),
// once it is about to be sent, until release is closed (or its context
// ends); holding is closed then. It records the give-back of every script
// call on key.
type expiredHold struct {
	key               string
	holding, release  chan struct{}
	holdOnce          atomic.Bool
	mu                sync.Mutex
	givebacks, others []string // ARGV 8 of the calls that take, of the others
}

func (h *expiredHold) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *expiredHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		args := cmd.Args()
		if len(args) < 13 || args[3] != h.key {
			return next(ctx, cmd) // another key, or no script
		}
		n, back := fmt.Sprint(args[4]), fmt.Sprint(args[11])
		h.mu.Lock()
		if n != "0" {
			h.givebacks = append(h.givebacks, back)
		} else {
			h.others = append(h.others, back)
		}
		h.mu.Unlock()
		if n != "0" && back != "0" && h.holdOnce.CompareAndSwap(false, true) {
			close(h.holding)
			select {
			case <-h.release:
			case <-ctx.Done(): // the limiter's timeout: the test has failed
				return ctx.Err()
			}
		}
		return next(ctx, cmd)
	}
}

func (h *expiredHold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestLeaseExpiredGivenBackOnce: two calls find key's lease expired with 3
// requests unspent (5 leased, 2 spent). The first to reach Redis gives the
// 3 back in its take's script call, and is held before it is sent while a
// concurrent call (a take, a report, a Sweep) runs on the same expired
// lease: that one must give back nothing, the leftovers being already on
// their way. The instances then admit exactly the limit: a second give-back
// would admit 3 more, none would admit 3 fewer.
func TestLeaseExpiredGivenBackOnce(t *testing.T) {
	srv := redistest.Start(t)
	const size, spent, ttl = 5, 2, time.Millisecond
	for _, racer := range []string{"take", "report", "sweep"} {
		for _, a := range leasing {
			t.Run(racer+"/"+a.String(), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
				var clock atomic.Int64
				clock.Store(5 * int64(time.Hour))
				clocked := hotlimit.WithClock(clock.Load)
				client := newClient(t, srv)
				prefix := redislimit.WithPrefix("once" + racer + a.String() + ":")
				leased := newExact(t, client, c, clocked, prefix, redislimit.WithLease(size, ttl), redislimit.WithBatch(0, 0))
				other := newExact(t, newClient(t, srv), c, clocked, prefix)
				take(t, leased, "warm", 0) // loads the script: each call below is one EVALSHA

				require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
				for range spent {
					require.True(t, take(t, leased, "k", 1).Allowed, "from the lease")
				}
				require.EqualValues(t, size-spent, redislimit.LeaseLeft(leased, "k"))
				clock.Add(int64(ttl)) // the lease expires with 3 unspent
				redisLeft := c.Limit - 1 - size

				h := &expiredHold{key: leased.RedisKey("k"), holding: make(chan struct{}), release: make(chan struct{})}
				client.AddHook(h)
				first := make(chan hotlimit.Decision, 1)
				go func() {
					d, _ := leased.TakeContext(context.Background(), "k", 1)
					first <- d
				}()
				await(t, h.holding, "the call that gives the expired lease back")
				passed := 1 + spent
				switch racer {
				case "take":
					d := take(t, leased, "k", 1)
					require.True(t, d.Allowed, "Redis has 4")
					passed++
					redisLeft--
					assert.Equal(t, redisLeft, d.Remaining, "Redis's, without the expired lease's 3, which are on their way")
				case "report":
					assert.Equal(t, redisLeft, take(t, leased, "k", 0).Remaining, "Redis's, without the expired lease's 3, which are on their way")
				case "sweep":
					assert.Equal(t, 1, leased.Sweep(), "the expired lease ends, with nothing left to give back")
				}
				close(h.release)
				d := <-first
				require.True(t, d.Allowed)
				passed++
				redisLeft += size - spent - 1 // the leftovers back, 1 taken
				leasedNow := min(size, redisLeft)
				assert.Equal(t, redisLeft, d.Remaining, "Redis's and the new lease's")

				h.mu.Lock()
				assert.Equal(t, []string{"3"}, nonZero(h.givebacks, h.others), "exactly one give-back, of the 3 unspent")
				h.mu.Unlock()
				assert.Equal(t, redisLeft-leasedNow, take(t, other, "k", 0).Remaining)
				for take(t, leased, "k", 1).Allowed {
					passed++
				}
				for take(t, other, "k", 1).Allowed {
					passed++
				}
				assert.Equal(t, c.Limit, passed, "the limit, the leftovers counted once")
			})
		}
	}
}

// nonZero returns the elements of lists that are not "0", in order.
func nonZero(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if s != "0" {
				out = append(out, s)
			}
		}
	}
	return out
}

// TestLeaseExpiredLostReplyGivesBackOnce: a take that carries an expired
// lease's leftovers and whose reply is lost with its connection (the
// script ran in Redis, the client reads EOF) is not sent again, though
// go-redis retries a take on EOF by default: run twice, it would give the
// leftovers back twice, and the key would admit them twice. The lost reply
// is the call's error, FailClosed decides it, and Redis counts the
// leftovers back once and the take once: the instances then admit exactly
// the limit. Sent by itself, and in a batch while another call is in
// flight.
func TestLeaseExpiredLostReplyGivesBackOnce(t *testing.T) {
	srv := redistest.Start(t)
	proxy := startDropProxy(t, srv.Addr)
	const size, spent, ttl = 5, 2, time.Millisecond
	for _, batched := range []bool{false, true} {
		for _, a := range leasing {
			t.Run(fmt.Sprintf("batched=%v/%v", batched, a), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
				var clock atomic.Int64
				clock.Store(7 * int64(time.Hour))
				clocked := hotlimit.WithClock(clock.Load)
				client := redis.NewClient(&redis.Options{Addr: proxy.Addr, ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = client.Close() })
				prefix := redislimit.WithPrefix(fmt.Sprintf("lost%v%v:", batched, a))
				opts := []hotlimit.Option{clocked, prefix, redislimit.WithLease(size, ttl), redislimit.WithFailPolicy(redislimit.FailClosed)}
				if !batched {
					opts = append(opts, redislimit.WithBatch(0, 0))
				}
				leased := newExact(t, client, c, opts...)
				other := newExact(t, newClient(t, srv), c, clocked, prefix)

				require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
				for range spent {
					require.True(t, take(t, leased, "k", 1).Allowed, "from the lease")
				}
				clock.Add(int64(ttl)) // the lease expires with 3 unspent
				passed := 1 + spent

				var release func()
				if batched {
					h, held := holdFlusher(t, client, leased, nil)
					release = func() {
						close(h.release)
						<-held
					}
				}
				proxy.dropNextReply()
				before := proxy.dropped.Load()
				d, err := leased.TakeContext(context.Background(), "k", 1)
				require.Equal(t, before+1, proxy.dropped.Load(), "the reply was dropped")
				require.Error(t, err, "the lost reply is the call's error")
				require.False(t, d.Allowed, "FailClosed decides")
				if release != nil {
					release()
				}
				// Redis: 1 taken and 5 leased, the 3 back, 1 taken and 5
				// leased again by the call whose reply was lost (none of
				// which this instance holds), once.
				assert.Equal(t, c.Limit-1-size+(size-spent)-1-size, take(t, other, "k", 0).Remaining,
					"the leftovers given back once, the take counted once")
				for take(t, other, "k", 1).Allowed {
					passed++
				}
				assert.Equal(t, c.Limit-1-size, passed, "the limit, less what the lost call took")
			})
		}
	}
}

// TestFixedWindowExpiredLeaseNotGivenToNextWindow: a fixed window's lease
// that ends with its window, unspent, is not given back into the next
// window by the key's next call there, which carries its leftovers: the
// next window never counted them. Another instance takes first in the next
// window, so that a give-back into it would lower its count: the two
// instances then admit exactly the limit in that window.
func TestFixedWindowExpiredLeaseNotGivenToNextWindow(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	var now atomic.Int64
	now.Store(int64(20*time.Second + 900*time.Millisecond)) // 100 ms before window 21
	clocked := hotlimit.WithClock(now.Load)
	prefix := redislimit.WithPrefix("nextwindow:")
	leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(5, time.Hour))
	other := newExact(t, newClient(t, srv), c, clocked, prefix)

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
	require.True(t, take(t, leased, "k", 1).Allowed, "from the lease: 4 left")

	now.Store(int64(21 * time.Second)) // window 21: the lease has ended with 4
	passed := 0
	for range 3 {
		require.True(t, take(t, other, "k", 1).Allowed, "window 21 counts 3")
		passed++
	}
	d := take(t, leased, "k", 1) // carries the 4, for window 20
	require.True(t, d.Allowed)
	passed++
	assert.Equal(t, c.Limit-4, d.Remaining, "Redis's 1 and the new lease's 5: the 4 were not given back")
	assert.Equal(t, 1, take(t, other, "k", 0).Remaining, "window 21 counts 3, 1 and 5 leased")
	for range 2 * c.Limit {
		if take(t, leased, "k", 1).Allowed {
			passed++
		}
		if take(t, other, "k", 1).Allowed {
			passed++
		}
	}
	assert.Equal(t, c.Limit, passed, "window 21 admits exactly its limit")
}

// TestLeaseExpiringHammer: 3 instances with a lease of 8 that lasts a µs
// of their clock, 6 goroutines each taking from one key while the clock
// moves on at each take, and a goroutine per instance sweeping: leases
// keep expiring with requests unspent, which the key's next calls, the
// sweeps and Close race to give back. Every leftover is given back once:
// the instances never admit more than the limit, and once closed, a fresh
// limiter gets exactly the rest of a fixed window (a bucket loses to the
// give-backs what refilled while each lease was out, see WithLease). Each
// goroutine takes n at a time, 1 or 3, every algorithm that leases.
func TestLeaseExpiringHammer(t *testing.T) {
	srv := redistest.Start(t)
	const instances, workers, attempts, size, limit = 3, 6, 40, 8, 1000
	for _, a := range leasing {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%v/n=%d", a, n), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Hour}
				var clock atomic.Int64
				clock.Store(9*int64(time.Hour) + 1)
				clocked := hotlimit.WithClock(clock.Load)
				prefix := redislimit.WithPrefix(fmt.Sprintf("expiring%v%d:", a, n))
				lims := make([]*redislimit.Limiter, instances)
				for i := range lims {
					lims[i] = newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, time.Microsecond))
				}
				var passed, failed atomic.Int64
				var takers, sweepers sync.WaitGroup
				stop := make(chan struct{})
				for _, lim := range lims {
					sweepers.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
								lim.Sweep()
							}
						}
					})
					for range workers {
						takers.Go(func() {
							for range attempts {
								clock.Add(300) // the lease taken 4 takes ago has expired
								d, err := lim.TakeContext(context.Background(), "k", n)
								if err != nil {
									failed.Add(1)
								}
								if d.Allowed {
									passed.Add(int64(n))
								}
							}
						})
					}
				}
				takers.Wait()
				close(stop)
				sweepers.Wait()
				require.Zero(t, failed.Load(), "calls Redis did not decide")
				assert.LessOrEqual(t, int(passed.Load()), limit, "over-admitted")
				for _, lim := range lims {
					require.NoError(t, lim.Close())
				}
				fresh := newExact(t, newClient(t, srv), c, clocked, prefix)
				rest := 0
				for take(t, fresh, "k", 1).Allowed {
					rest++
				}
				assert.LessOrEqual(t, int(passed.Load())+rest, limit, "a leftover given back twice")
				if a == hotlimit.FixedWindow {
					assert.Equal(t, limit, int(passed.Load())+rest, "a leftover not given back")
				}
			})
		}
	}
}

// TestExpiredLeaseKeptPastTheCallersDeadline: an expired lease's leftovers
// are not taken into a call whose caller's deadline has passed, though the
// context's timer has not run yet: the client sets that deadline on its
// socket, the call fails there, and leftovers it carried would be lost, in
// neither the lease nor Redis. The key's next call gives them back.
func TestExpiredLeaseKeptPastTheCallersDeadline(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(now.Load), redislimit.WithLease(5, time.Second),
		redislimit.WithFailPolicy(redislimit.FailClosed))
	require.True(t, take(t, lim, "k", 1).Allowed, "1 taken, 5 leased: Redis holds 4")
	now.Add(int64(2 * time.Second)) // the lease has expired with its 5

	d, err := lim.TakeContext(limitertest.PastDeadline(context.Background()), "k", 1)
	require.Error(t, err, "the socket's deadline has passed")
	assert.False(t, d.Allowed, "FailClosed")

	d = take(t, lim, "k", 0)
	assert.Equal(t, c.Limit-1, d.Remaining, "the lease's 5 came back to Redis's 4")
}
