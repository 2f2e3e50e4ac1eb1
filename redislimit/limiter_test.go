package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// algorithms is every algorithm the scripts implement.
var algorithms = []hotlimit.Algorithm{
	hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter,
}

// leasing is every algorithm that supports WithLease.
var leasing = []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow}

// burstOf returns how many requests a fresh key of c admits at once.
func burstOf(c hotlimit.Config) int {
	if c.Burst > 0 {
		return c.Burst
	}
	return c.Limit
}

// newClient returns a client of its own for srv, as a separate machine would
// have, closed by the test's cleanup. Its read timeout is exactTimeout:
// go-redis sends a command again once its read times out (5 s by default),
// so that on a loaded machine a slow take of a test of what Redis decides
// counted twice. A limiter's own timeout (the caller's context) still
// bounds every call, as it does with any client.
func newClient(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, ReadTimeout: exactTimeout})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// newLimiter returns a Limiter of c on client, closed by the test's cleanup
// (before its client's, which was registered earlier).
func newLimiter(t testing.TB, client redis.UniversalClient, c hotlimit.Config, opts ...hotlimit.Option) *redislimit.Limiter {
	t.Helper()
	lim, err := redislimit.New(client, c, opts...)
	require.NoError(t, err, "%v", c)
	t.Cleanup(func() { _ = lim.Close() })
	return lim
}

// exactTimeout bounds each call of a test of what Redis decides: long enough
// that a loaded machine never hands a decision to the failure policy, which
// such a test would then fail on. The fault tests keep DefaultTimeout.
const exactTimeout = 10 * time.Second

// newExact is newLimiter for a test of what Redis decides, with
// exactTimeout; opts may still set a timeout of their own.
func newExact(t testing.TB, client redis.UniversalClient, c hotlimit.Config, opts ...hotlimit.Option) *redislimit.Limiter {
	t.Helper()
	return newLimiter(t, client, c, append([]hotlimit.Option{redislimit.WithTimeout(exactTimeout)}, opts...)...)
}

// take is TakeContext, which must be decided by Redis: an error means that
// the failure policy decided, and the test has nothing to check.
func take(t testing.TB, lim *redislimit.Limiter, key string, n int) hotlimit.Decision {
	t.Helper()
	d, err := lim.TakeContext(context.Background(), key, n)
	require.NoError(t, err, "Take(%q, %d)", key, n)
	return d
}

// newModel returns the sequential reference model of c (package
// internal/models, shared with the in-memory packages' tests).
//
// Redis has no epoch: its time 0 is the clock's, which is the models' epoch 0.
// The token bucket's and GCRA's models count a reading before their epoch as
// the epoch and add the wait until it (the in-memory limiters' epoch is their
// first reading); the differential test keeps their readings at or after 0,
// where that lag is zero. The in-memory token bucket counts in fixed point and
// its tests leave calls within a unit to it; the script counts exactly
// (tokens × window, integers), so its decisions must equal the exact model's.
func newModel(c hotlimit.Config) interface {
	Take(key string, n int, now int64) hotlimit.Decision
} {
	switch c.Algorithm {
	case hotlimit.TokenBucket:
		return models.NewTokenBucket(c.Limit, burstOf(c), c.Window, 0)
	case hotlimit.GCRA:
		return models.NewGCRA(c.Limit, burstOf(c), c.Window, 0)
	case hotlimit.FixedWindow:
		return models.NewFixedWindow(c.Limit, c.Window)
	case hotlimit.SlidingLog:
		return models.NewSlidingLog(c.Limit, c.Window)
	case hotlimit.SlidingCounter:
		return models.NewSlidingCounter(c.Limit, c.Window)
	}
	panic(fmt.Sprintf("no model of %v", c.Algorithm))
}

// randomN draws a request size in [-1, burst+1], with the edges and small
// sizes often.
func randomN(r *rand.Rand, burst int) int {
	switch p := r.IntN(100); {
	case p < 5:
		return -1
	case p < 12:
		return 0
	case p < 17:
		return burst + 1
	case p < 22:
		return burst
	case p < 60:
		return 1
	case p < 80:
		return 1 + r.IntN(min(burst, 3))
	default:
		return 1 + r.IntN(burst)
	}
}

// randomStep draws a clock step for c: zero, a nanosecond or three, a
// fraction of a request's time, up to two request times, up to two windows,
// whole windows, and back.
func randomStep(r *rand.Rand, c hotlimit.Config) int64 {
	w := int64(c.Window)
	tok := max(w/int64(c.Limit), 1) // the time one request takes to come back
	switch p := r.IntN(100); {
	case p < 15:
		return 0
	case p < 30:
		return 1 + r.Int64N(3)
	case p < 40:
		return r.Int64N(tok/4 + 1)
	case p < 60:
		return r.Int64N(2*tok + 1)
	case p < 75:
		return r.Int64N(2*w + 1)
	case p < 82:
		return w * (1 + r.Int64N(2))
	default:
		return -r.Int64N(min(w, 3*tok) + 1)
	}
}

func abs(x int64) int64 { return max(x, -x) }

// walkClock returns the reading now, in [lo, hi], moved by the step s, which
// turns back at an end of the range as a walk does (now - |s| past hi, now +
// |s| before lo) and stops at the end it would pass once turned, a step as
// large as the range included: the reading is in [lo, hi] whatever s.
func walkClock(lo, hi, now, s int64) int64 {
	if next := now + s; next > hi {
		s = -abs(s)
	} else if next < lo {
		s = abs(s)
	}
	return min(max(now+s, lo), hi)
}

// diffConfigs are the policies of the differential test.
var diffConfigs = func() []hotlimit.Config {
	var cs []hotlimit.Config
	for _, a := range algorithms {
		cs = append(cs,
			hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Second},
			hotlimit.Config{Algorithm: a, Limit: 3, Window: 7 * time.Millisecond},
			hotlimit.Config{Algorithm: a, Limit: 100, Window: time.Minute},
			hotlimit.Config{Algorithm: a, Limit: 1, Window: 24 * time.Hour},
		)
		if a.HasBurst() {
			cs = append(cs,
				hotlimit.Config{Algorithm: a, Limit: 100, Window: time.Minute, Burst: 10},
				hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Second, Burst: 7},
			)
		}
	}
	return cs
}()

// TestDifferential replays random sequences of Take(key, n), n in [-1,
// burst+1], on three keys, with a fake clock stepped by zero, a few
// nanoseconds, fractions of a request's time, windows and back, against the
// sequential model of the algorithm: every Decision must be the model's,
// field by field. On some denials it also retries at RetryAfter − 1 (denied,
// RetryAfter 1 ns) and at RetryAfter (allowed), both checked against the
// model too.
//
// Readings start anywhere in ±2^50 ns (at or after 0 for the token bucket
// and GCRA; see newModel) and stay within ±2^51, the range the limiter
// accepts. The keys' TTLs are real time (a second plus the fake time
// until reset): a sequence takes a few tens of milliseconds, far from them.
func TestDifferential(t *testing.T) {
	srv := redistest.Start(t)
	seqs, steps := 4, 150
	if testing.Short() {
		seqs = 2
	}
	for ci, c := range diffConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			var clock atomic.Int64
			lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load))
			burst := burstOf(c)
			positive := c.Algorithm.HasBurst()
			for seq := range seqs {
				r := rand.New(rand.NewPCG(uint64(ci), uint64(seq)))
				m := newModel(c)
				now, lo, hi := r.Int64N(1<<51)-1<<50, int64(-1<<51), int64(1<<51)
				if positive {
					now, lo = r.Int64N(1<<50), 0
				}
				keys := []string{fmt.Sprintf("d%d-%d-a", ci, seq), fmt.Sprintf("d%d-%d-b", ci, seq), fmt.Sprintf("d%d-%d-c", ci, seq)}
				// check makes Take(key, n) at now on both and compares.
				check := func(step int, key string, n int, now int64) (hotlimit.Decision, bool) {
					clock.Store(now)
					want := m.Take(key, n, now)
					got := take(t, lim, key, n)
					return got, assert.Equal(t, want, got, "seq %d step %d: Take(%q, %d) at %d", seq, step, key, n, now)
				}
				for step := range steps {
					now = walkClock(lo, hi, now, randomStep(r, c))
					key := keys[r.IntN(len(keys))]
					n := randomN(r, burst)
					d, ok := check(step, key, n, now)
					if !ok {
						return
					}
					if d.Allowed || d.RetryAfter == hotlimit.Never || r.IntN(3) > 0 ||
						now+int64(d.RetryAfter) > redislimit.ClockRange {
						continue
					}
					retry := int64(d.RetryAfter)
					early, ok := check(step, key, n, now+retry-1)
					if !ok {
						return
					}
					assert.False(t, early.Allowed, "seq %d step %d: 1 ns before RetryAfter", seq, step)
					assert.Equal(t, time.Nanosecond, early.RetryAfter, "seq %d step %d: 1 ns before RetryAfter", seq, step)
					late, ok := check(step, key, n, now+retry)
					if !ok {
						return
					}
					assert.True(t, late.Allowed, "seq %d step %d: at RetryAfter", seq, step)
					now += retry
				}
			}
		})
	}
}

// frozenConfigs are the policies of the frozen-clock hammers: every
// algorithm at limits 1, 7 and 100, and bursts below and above the limit.
var frozenConfigs = func() []hotlimit.Config {
	var cs []hotlimit.Config
	for _, a := range algorithms {
		for _, limit := range []int{1, 7, 100} {
			cs = append(cs, hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Minute})
		}
	}
	return append(cs,
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 3},
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute, Burst: 20},
	)
}()

// hammer has workers goroutines per limiter call Take(key, 1) until each made
// attempts calls, all at once, and returns how many passed. Every call must be
// decided by Redis.
func hammer(t *testing.T, lims []*redislimit.Limiter, workers, attempts int, key string) int {
	t.Helper()
	var passed, failed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, lim := range lims {
		for range workers {
			wg.Go(func() {
				<-start
				for range attempts {
					d, err := lim.TakeContext(context.Background(), key, 1)
					if err != nil {
						failed.Add(1)
					}
					if d.Allowed {
						passed.Add(1)
					}
				}
			})
		}
	}
	close(start)
	wg.Wait()
	require.Zero(t, failed.Load(), "calls Redis did not decide")
	return int(passed.Load())
}

// TestFrozenClockExact: 8 instances (a client and a Limiter each, as 8
// machines would have) with 4 goroutines each hammer one key with a frozen
// clock, at least three times the burst in all: exactly the burst passes,
// for every algorithm, whatever the interleaving of the script calls.
func TestFrozenClockExact(t *testing.T) {
	srv := redistest.Start(t)
	const instances, workers = 8, 4
	clients := make([]*redis.Client, instances)
	for i := range clients {
		clients[i] = newClient(t, srv)
	}
	for ci, c := range frozenConfigs {
		t.Run(c.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(int64(ci)*int64(time.Hour) + 12345) // mid-window
			lims := make([]*redislimit.Limiter, instances)
			for i := range lims {
				lims[i] = newExact(t, clients[i], c, hotlimit.WithClock(clock.Load))
			}
			want := burstOf(c)
			key := fmt.Sprintf("frozen-%d", ci)
			assert.Equal(t, want, hammer(t, lims, workers, 3*want/(instances*workers)+2, key))
			d := take(t, lims[0], key, 0)
			assert.Zero(t, d.Remaining, "the key is spent")
			assert.Positive(t, d.ResetAfter)
		})
	}
}

// TestRedisTimeExact is TestFrozenClockExact with Redis's clock: over a
// 1000-hour window, nothing comes back while the test runs (a token bucket
// of 50 refills one every 72 s; a window boundary, aligned on the Unix
// epoch, falls within a second of the test about once in 3.6 million runs).
func TestRedisTimeExact(t *testing.T) {
	srv := redistest.Start(t)
	const instances, workers, limit = 8, 4, 50
	clients := make([]*redis.Client, instances)
	for i := range clients {
		clients[i] = newClient(t, srv)
	}
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: limit, Window: 1000 * time.Hour}
			lims := make([]*redislimit.Limiter, instances)
			for i := range lims {
				lims[i] = newExact(t, clients[i], c, redislimit.WithFailPolicy(redislimit.FailClosed)) // no in-memory twin: its windows end at 24h
			}
			assert.Equal(t, limit, hammer(t, lims, workers, 5, "redis-time"))
		})
	}
}

// TestRetryAfterFakeClock: with a fake clock, a denied request retried
// exactly RetryAfter later passes, and 1 ns earlier it does not (and is told
// 1 ns); a key is back to its full quota exactly ResetAfter later, and not
// 1 ns earlier. For requests of 1 and 2 on a key whose requests were spread
// over time (so that a sliding log's oldest is not its newest).
func TestRetryAfterFakeClock(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range algorithms {
		for _, n := range []int{1, 2} {
			t.Run(fmt.Sprintf("%v/n=%d", a, n), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Second}
				var clock atomic.Int64
				clock.Store(100*int64(time.Second) + 1) // just after a window's start
				lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix(fmt.Sprintf("retry%d:", n)))
				for range 3 {
					require.True(t, take(t, lim, "k", 1).Allowed)
					clock.Add(int64(10 * time.Millisecond))
				}
				d := take(t, lim, "k", n)
				require.False(t, d.Allowed)
				require.Positive(t, d.RetryAfter)
				require.NotEqual(t, hotlimit.Never, d.RetryAfter)
				now := clock.Load()

				clock.Store(now + int64(d.RetryAfter) - 1)
				early := take(t, lim, "k", n)
				assert.False(t, early.Allowed, "1 ns before RetryAfter %v", d.RetryAfter)
				assert.Equal(t, time.Nanosecond, early.RetryAfter, "1 ns before RetryAfter %v", d.RetryAfter)
				clock.Store(now + int64(d.RetryAfter))
				assert.True(t, take(t, lim, "k", n).Allowed, "at RetryAfter %v", d.RetryAfter)

				d = take(t, lim, "k", 0)
				require.Positive(t, d.ResetAfter)
				now = clock.Load()
				clock.Store(now + int64(d.ResetAfter) - 1)
				early = take(t, lim, "k", 0)
				assert.Equal(t, time.Nanosecond, early.ResetAfter, "1 ns before ResetAfter %v", d.ResetAfter)
				assert.Less(t, early.Remaining, c.Limit, "1 ns before ResetAfter %v", d.ResetAfter)
				clock.Store(now + int64(d.ResetAfter))
				full := take(t, lim, "k", 0)
				assert.Zero(t, full.ResetAfter, "at ResetAfter %v", d.ResetAfter)
				assert.Equal(t, c.Limit, full.Remaining, "at ResetAfter %v", d.ResetAfter)
			})
		}
	}
}

// TestRetryAfterRedisTime: with Redis's clock, a denied request passes once
// its RetryAfter has passed (plus a millisecond for the difference between
// Go's monotonic sleep and Redis's wall clock), and not at once: not while
// less than RetryAfter, less two milliseconds for the clocks, has passed
// since the denial's call began (Redis decided it after that). A machine
// that stalls the test longer than that skips the second check.
func TestRetryAfterRedisTime(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			t.Parallel()
			lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 2, Window: 200 * time.Millisecond})
			var d hotlimit.Decision
			// denied is when the denial's call began.
			var denied time.Time
			for range 8 { // 2 pass, unless a window boundary passes meanwhile
				denied = time.Now()
				if d = take(t, lim, "k", 1); !d.Allowed {
					break
				}
			}
			require.False(t, d.Allowed, "the key is spent")
			require.Positive(t, d.RetryAfter)
			require.LessOrEqual(t, d.RetryAfter, 400*time.Millisecond)
			again := take(t, lim, "k", 1)
			if early := time.Since(denied); early < d.RetryAfter-2*time.Millisecond {
				assert.False(t, again.Allowed, "%v after the denial, before its RetryAfter %v", early, d.RetryAfter)
			} else {
				t.Logf("not checked before RetryAfter %v: %v passed", d.RetryAfter, early)
			}
			if again.Allowed {
				return // the request RetryAfter promised has passed
			}
			time.Sleep(d.RetryAfter + time.Millisecond)
			assert.True(t, take(t, lim, "k", 1).Allowed, "after RetryAfter %v", d.RetryAfter)
		})
	}
}

// TestRefund: a Refund of TakeReceipt's receipt gives its requests back, for
// every algorithm: with a frozen clock, the key then admits exactly them
// again; a denied Take's receipt gives back nothing.
func TestRefund(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}, hotlimit.WithClock(clock.Load))
			_, one := lim.TakeReceipt("k", 1)
			d, two := lim.TakeReceipt("k", 2)
			require.True(t, d.Allowed)
			assert.Equal(t, hotlimit.Receipt{N: 2, At: clock.Load()}, two)
			require.True(t, lim.Allow("k"))
			denied, none := lim.TakeReceipt("k", 1)
			require.False(t, denied.Allowed)
			assert.Zero(t, none)

			lim.Refund("k", none)
			assert.False(t, lim.Allow("k"), "a denied receipt gives nothing back")
			lim.Refund("k", two)
			assert.Equal(t, 2, take(t, lim, "k", 0).Remaining)
			assert.True(t, take(t, lim, "k", 2).Allowed)
			assert.False(t, lim.Allow("k"))
			lim.Refund("k", one)
			assert.True(t, lim.Allow("k"))
			assert.False(t, lim.Allow("k"))
		})
	}
}

// TestRefundHammer: 32 goroutines take 1 to 3 requests at once from one key
// and give many back, with a frozen clock (limitertest.RefundHammer): the
// requests held out never exceed the limit, and the passes total the limit
// plus the refunds exactly (each script call is atomic, so even the sliding
// log's Take of several is exact here).
func TestRefundHammer(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			t.Parallel()
			var clock atomic.Int64
			clock.Store(int64(time.Hour) + 1)
			c := hotlimit.Config{Algorithm: a, Limit: 50, Window: time.Minute}
			lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load))
			limitertest.RefundHammer(t, lim, c.Limit, 3, true)
		})
	}
}

// TestLeaseHammer: 3 instances with a lease of 8 and 6 goroutines each take
// single requests from hot keys with a frozen clock. On a key they drain,
// they never admit more than the limit in all, and at most 8 × 3 fewer
// before Close; on a key they take 72 of 100 from, they admit every request
// (72 + 8 × 3 ≤ 100), leaving leases unspent. Close gives every unspent lease
// back, so that a fresh limiter then gets exactly the rest of each key.
func TestLeaseHammer(t *testing.T) {
	srv := redistest.Start(t)
	const instances, workers, size, limit = 3, 6, 8, 100
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: limit, Window: time.Hour}
			var clock atomic.Int64
			clock.Store(5*int64(time.Hour) + 1)
			clocked := hotlimit.WithClock(clock.Load)
			lims := make([]*redislimit.Limiter, instances)
			for i := range lims {
				lims[i] = newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(size, time.Minute))
			}
			drained := hammer(t, lims, workers, 30, "hot")
			assert.LessOrEqual(t, drained, limit, "over-admitted")
			assert.GreaterOrEqual(t, drained, limit-size*instances, "under-admitted by more than the leases")
			assert.Equal(t, instances*workers*4, hammer(t, lims, workers, 4, "warm"))
			for _, lim := range lims {
				assert.Positive(t, lim.Len())
				require.NoError(t, lim.Close())
				assert.Zero(t, lim.Len())
			}

			fresh := newExact(t, newClient(t, srv), c, clocked)
			for key, admitted := range map[string]int{"hot": drained, "warm": instances * workers * 4} {
				assert.Equal(t, limit-admitted, take(t, fresh, key, 0).Remaining, key)
				rest := 0
				for take(t, fresh, key, 1).Allowed {
					rest++
				}
				assert.Equal(t, limit-admitted, rest, "%s: the leases' leftover came back", key)
			}
		})
	}
}

// TestLeaseExpires: a lease is spent in process until its ttl, not after;
// its unspent requests stay taken in Redis until Sweep ends it and gives
// them back, exactly (the token bucket's and GCRA's give-back less what
// refilled since cancel the refill of the leased tokens), or the key's
// next call on the leasing instance does (see
// TestLeaseExpiredGivenBackByNextCall).
func TestLeaseExpires(t *testing.T) {
	srv := redistest.Start(t)
	const ttl = 100 * time.Millisecond
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var clock atomic.Int64
			t0 := 7*int64(time.Hour) + int64(time.Second)
			clock.Store(t0)
			clocked := hotlimit.WithClock(clock.Load)
			leased := newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(5, ttl))
			other := newExact(t, newClient(t, srv), c, clocked)

			require.True(t, take(t, leased, "k", 1).Allowed) // Redis: 1 + 5 leased
			assert.Equal(t, 1, leased.Len())
			assert.Equal(t, 4, take(t, other, "k", 0).Remaining)
			require.True(t, take(t, other, "k", 4).Allowed)
			require.False(t, take(t, other, "k", 1).Allowed)

			clock.Store(t0 + int64(ttl) - 1)
			d := take(t, leased, "k", 1)
			assert.True(t, d.Allowed, "from the lease, before its ttl")
			assert.Equal(t, 4, d.Remaining, "what the lease has left")
			clock.Store(t0 + int64(ttl))
			assert.Zero(t, take(t, other, "k", 0).Remaining, "the expired lease's 4 are still taken")
			assert.Equal(t, 1, leased.Len(), "until Sweep")

			assert.Equal(t, 1, leased.Sweep())
			assert.Zero(t, leased.Len())
			assert.Zero(t, leased.Sweep())
			assert.Equal(t, 4, take(t, other, "k", 0).Remaining, "the 4 unspent came back")
			assert.True(t, take(t, other, "k", 4).Allowed)
			assert.False(t, take(t, other, "k", 1).Allowed)
		})
	}
}

// TestNewValidation: every invalid Config or option, and every Config outside
// the range where the scripts' arithmetic (doubles) is exact, is an error
// wrapping hotlimit.ErrInvalidConfig; the largest valid ones are accepted.
// New does not contact Redis, so no server is needed.
func TestNewValidation(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	timed := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = timed.Close() })
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	t.Cleanup(func() { _ = cluster.Close() })

	var clock atomic.Int64
	clocked := hotlimit.WithClock(clock.Load)
	closed := redislimit.WithFailPolicy(redislimit.FailClosed) // no in-memory twin, whose ranges differ
	tb := func(limit int, window time.Duration, burst int) hotlimit.Config {
		return hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: limit, Window: window, Burst: burst}
	}
	with := func(a hotlimit.Algorithm, limit int, window time.Duration) hotlimit.Config {
		return hotlimit.Config{Algorithm: a, Limit: limit, Window: window}
	}
	us30 := time.Duration(1<<30) * time.Microsecond // 2^30 ticks of Redis's clock
	valid := with(hotlimit.GCRA, 10, time.Second)

	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		c      hotlimit.Config
		opts   []hotlimit.Option
		ok     bool
	}{
		{"nil client", nil, valid, nil, false},
		{"nil *redis.Client", (*redis.Client)(nil), valid, nil, false},
		{"nil *redis.ClusterClient", (*redis.ClusterClient)(nil), valid, nil, false},
		{"nil *redis.Ring", (*redis.Ring)(nil), valid, nil, false},
		{"valid", client, valid, nil, true},
		{"invalid config", client, with(hotlimit.GCRA, 0, time.Second), nil, false},
		{"window not whole µs", client, with(hotlimit.FixedWindow, 1, 1500*time.Nanosecond), nil, false},
		{"window whole µs", client, with(hotlimit.FixedWindow, 1, 1500*time.Microsecond), nil, true},
		{"window in ns with a clock", client, with(hotlimit.FixedWindow, 1, 1500*time.Nanosecond), []hotlimit.Option{clocked, closed}, true},
		{"window 2^50 µs", client, with(hotlimit.FixedWindow, 1, time.Duration(1<<50)*time.Microsecond), []hotlimit.Option{closed}, true},
		{"window 2^50+1 µs", client, with(hotlimit.FixedWindow, 1, time.Duration(1<<50+1)*time.Microsecond), []hotlimit.Option{closed}, false},
		{"window 2^50 ns with a clock", client, with(hotlimit.FixedWindow, 1, 1<<50), []hotlimit.Option{clocked, closed}, true},
		{"window 2^50+1 ns with a clock", client, with(hotlimit.FixedWindow, 1, 1<<50+1), []hotlimit.Option{clocked, closed}, false},
		{"window of 14 days with a clock, FailLocal", client, with(hotlimit.FixedWindow, 1, 14*24*time.Hour), []hotlimit.Option{clocked}, false},
		{"window of 13 days with a clock, FailLocal", client, with(hotlimit.FixedWindow, 1, 13*24*time.Hour), []hotlimit.Option{clocked}, true},
		{"burst × window = 2^52 − 2^30", client, tb(1, us30, 1<<22-1), []hotlimit.Option{closed}, true},
		{"burst × window = 2^52", client, tb(1, us30, 1<<22), []hotlimit.Option{closed}, false},
		{"limit × window = 2^52", client, tb(1<<22, us30, 0), []hotlimit.Option{closed}, false},
		{"gcra burst × window = 2^52, ns", client, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 1 << 40, Burst: 1 << 12}, []hotlimit.Option{clocked, closed}, false},
		{"gcra burst × window < 2^52, ns", client, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 1 << 40, Burst: 1<<12 - 1}, []hotlimit.Option{clocked, closed}, true},
		{"sliding counter (limit+1) × window = 2^52", client, with(hotlimit.SlidingCounter, 1<<22-1, us30), []hotlimit.Option{closed}, false},
		{"sliding counter (limit+1) × window < 2^52", client, with(hotlimit.SlidingCounter, 1<<22-2, us30), []hotlimit.Option{closed}, true},
		{"token bucket limit 2^21, FailLocal", client, with(hotlimit.TokenBucket, 1<<21, time.Second), nil, false},
		{"token bucket limit 2^21, FailOpen", client, with(hotlimit.TokenBucket, 1<<21, time.Second), []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailOpen)}, true},
		{"sliding log 65536", client, with(hotlimit.SlidingLog, 1<<16, time.Second), []hotlimit.Option{closed}, true},
		{"sliding log 65537", client, with(hotlimit.SlidingLog, 1<<16+1, time.Second), []hotlimit.Option{closed}, false},
		{"timeout without ContextTimeoutEnabled", client, valid, []hotlimit.Option{redislimit.WithTimeout(time.Second)}, true},
		{"timeout without ContextTimeoutEnabled, cluster", cluster, valid, []hotlimit.Option{redislimit.WithTimeout(time.Second)}, true},
		{"timeout with ContextTimeoutEnabled", timed, valid, []hotlimit.Option{redislimit.WithTimeout(time.Second)}, true},
		{"no timeout without ContextTimeoutEnabled", client, valid, []hotlimit.Option{redislimit.WithTimeout(0)}, true},
		{"lease on a sliding log", client, with(hotlimit.SlidingLog, 10, time.Second), []hotlimit.Option{redislimit.WithLease(5, time.Second)}, false},
		{"lease on a sliding counter", client, with(hotlimit.SlidingCounter, 10, time.Second), []hotlimit.Option{redislimit.WithLease(5, time.Second)}, false},
		{"lease off on a sliding log", client, with(hotlimit.SlidingLog, 10, time.Second), []hotlimit.Option{redislimit.WithLease(0, 0)}, true},
		{"lease without ttl", client, valid, []hotlimit.Option{redislimit.WithLease(5, 0)}, false},
		{"lease ttl under a µs, which no lease outlives", client, valid, []hotlimit.Option{redislimit.WithLease(5, time.Microsecond-1)}, false},
		{"lease ttl of a µs", client, valid, []hotlimit.Option{redislimit.WithLease(5, time.Microsecond)}, true},
		{"lease ttl of a ns with a clock", client, valid, []hotlimit.Option{redislimit.WithLease(5, time.Nanosecond), clocked}, true},
		{"not a policy", client, valid, []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailPolicy(9))}, false},
		{"breaker without cooldown", client, valid, []hotlimit.Option{redislimit.WithBreaker(3, 0)}, false},
		{"batch of MaxBatch", client, valid, []hotlimit.Option{redislimit.WithBatch(redislimit.MaxBatch, 1)}, true},
		{"batch above MaxBatch", client, valid, []hotlimit.Option{redislimit.WithBatch(redislimit.MaxBatch+1, 1)}, false},
		{"MaxFlushers", client, valid, []hotlimit.Option{redislimit.WithBatch(1, redislimit.MaxFlushers)}, true},
		{"flushers above MaxFlushers", client, valid, []hotlimit.Option{redislimit.WithBatch(1, redislimit.MaxFlushers+1)}, false},
		{"flushers above MaxFlushers, batching off", client, valid, []hotlimit.Option{redislimit.WithBatch(0, redislimit.MaxFlushers+1)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim, err := redislimit.New(tc.client, tc.c, tc.opts...)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.c, lim.Config())
				_ = lim.Close()
				return
			}
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
			assert.Nil(t, lim)
		})
	}
	if strconv.IntSize == 64 { // on 32 bits a Config's int stops at 2^31-1 first
		for _, tc := range []struct {
			limit int64
			ok    bool
		}{{1<<52 - 1, true}, {1 << 52, false}} {
			lim, err := redislimit.New(client, with(hotlimit.FixedWindow, int(tc.limit), time.Second), closed)
			if tc.ok {
				assert.NoError(t, err, "limit %d", tc.limit)
				_ = lim.Close()
				continue
			}
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "limit %d", tc.limit)
		}
	}
}

// TestNewReportsTheFirstInvalidOption: of several invalid options, New's
// error names the first given.
func TestNewReportsTheFirstInvalidOption(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New fails first
	defer client.Close()
	c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Second}
	_, err := redislimit.New(client, c, redislimit.WithFailPolicy(redislimit.FailPolicy(9)), redislimit.WithBatch(redislimit.MaxBatch+1, 1))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "WithFailPolicy FailPolicy(9)")
	_, err = redislimit.New(client, c, redislimit.WithBatch(redislimit.MaxBatch+1, 1), redislimit.WithFailPolicy(redislimit.FailPolicy(9)))
	require.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "above MaxBatch")
}

// TestNewErrorsNameOnlyWhatRedisTakes: a Config of no algorithm is told
// the algorithms redislimit takes, without Unlimited, which it refuses; and
// an Unlimited Config is told to stay in memory whatever its other fields,
// not to drop a window, which would not make it work on Redis either.
func TestNewErrorsNameOnlyWhatRedisTakes(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New fails first
	defer client.Close()
	for _, a := range []hotlimit.Algorithm{0, 99} {
		_, err := redislimit.New(client, hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Second})
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", a)
		assert.Contains(t, err.Error(), "want one of TokenBucket, FixedWindow, SlidingLog, GCRA, SlidingCounter", "%v", a)
		assert.NotContains(t, err.Error(), "Unlimited", "%v", a)
	}
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.Unlimited},
		{Algorithm: hotlimit.Unlimited, Window: 5 * time.Second},
		{Algorithm: hotlimit.Unlimited, Limit: 5, Burst: 2},
	} {
		_, err := redislimit.New(client, c)
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%+v", c)
		assert.Contains(t, err.Error(), "Unlimited keeps no state to share: use it in memory", "%+v", c)
		assert.NotContains(t, err.Error(), "takes no", "%+v", c)
	}
}

// TestFactoryNilClient: a service whose limits are built by Factory on a
// client variable never set (a nil *redis.Client, say) fails to build with
// an error wrapping hotlimit.ErrInvalidConfig rather than panic, as does
// the factory called by itself.
func TestFactoryNilClient(t *testing.T) {
	def := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Second}
	for _, client := range []redis.UniversalClient{nil, (*redis.Client)(nil), (*redis.ClusterClient)(nil), (*redis.Ring)(nil)} {
		f := redislimit.Factory(client)
		assert.NotPanics(t, func() {
			svc, err := service.New(def, hotlimit.WithFactory(f))
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%T", client)
			assert.Nil(t, svc, "%T", client)
		})
		assert.NotPanics(t, func() {
			lim, err := f(def)
			assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%T", client)
			assert.Nil(t, lim, "%T", client)
		})
	}
}

// TestClockRange: a clock reading beyond ±2^51 ns is refused with
// ErrClockRange, every time (it says nothing of Redis, so it does not open
// the breaker); ±2^51 itself is decided by Redis.
func TestClockRange(t *testing.T) {
	srv := redistest.Start(t)
	var clock atomic.Int64
	lim := newExact(t, newClient(t, srv), hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Second},
		hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
	for _, now := range []int64{redislimit.ClockRange, -redislimit.ClockRange} {
		clock.Store(now)
		assert.True(t, take(t, lim, "k", 1).Allowed, "at %d", now)
	}
	for _, now := range []int64{redislimit.ClockRange + 1, -(redislimit.ClockRange + 1), 1<<62 + 7} {
		clock.Store(now)
		for i := range 5 {
			d, err := lim.TakeContext(context.Background(), "k", 1)
			assert.ErrorIs(t, err, redislimit.ErrClockRange, "at %d, call %d", now, i)
			assert.False(t, d.Allowed, "FailClosed")
		}
	}
	clock.Store(redislimit.ClockRange)
	assert.True(t, take(t, lim, "k", 1).Allowed, "the breaker is closed")
}

// TestKeyLayout: each key of a limiter is one Redis key, the prefix, the
// Config and the key as its own hash tag; every write sets a TTL of at most
// the time to a full quota plus a second, after which the key is gone, and a
// fresh one again.
func TestKeyLayout(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()

	var clock atomic.Int64
	lim := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: 100 * time.Millisecond, Burst: 7},
		hotlimit.WithClock(clock.Load), redislimit.WithPrefix("app1:"))
	take(t, lim, "user:42", 1)
	keys, err := client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"app1:GCRA:5:100000000:7:ns:{user:42}"}, keys, "with a clock, in ns")
	require.NoError(t, client.FlushDB(ctx).Err())

	const window = 100 * time.Millisecond
	want := map[string]hotlimit.Algorithm{}
	lims := map[hotlimit.Algorithm]*redislimit.Limiter{}
	for _, a := range algorithms {
		lim := newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 5, Window: window}, redislimit.WithPrefix("app2:"))
		lims[a] = lim
		d := take(t, lim, "user:42", 2)
		require.True(t, d.Allowed)
		take(t, lim, "{user}:43", 1)
		want[fmt.Sprintf("app2:%v:5:100000:5:µs:{user:42}", a)] = a
		want[fmt.Sprintf("app2:%v:5:100000:5:µs:{{user}:43}", a)] = a
	}
	keys, err = client.Keys(ctx, "*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, keysOf(want), keys)
	for k := range want {
		assert.True(t, strings.HasPrefix(k, "app2:"), k)
		ttl, err := client.PTTL(ctx, k).Result()
		require.NoError(t, err)
		assert.Positive(t, ttl, "%s has a TTL", k)
		assert.LessOrEqual(t, ttl, 2*window+time.Second, "%s: at most the time to reset, plus a second", k)
	}

	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := client.DBSize(ctx).Result()
		require.NoError(t, err)
		if n == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "%d keys left", n)
		time.Sleep(50 * time.Millisecond)
	}
	for a, lim := range lims {
		d := take(t, lim, "user:42", 0)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 5}, d, "%v: gone is fresh", a)
	}
}

func keysOf[K comparable, V any](m map[K]V) []K {
	var ks []K
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestService: two instances of a service (a client each) on one Redis,
// built with Factory, resolve each request most specific first, and admit
// exactly each rule's limit per pair in total, whichever instance gets the
// requests.
func TestService(t *testing.T) {
	srv := redistest.Start(t)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	def := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	user := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}
	api := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Minute}
	pair := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 2, Window: time.Minute}
	svcs := make([]*service.Service, 2)
	for i := range svcs {
		svc, err := service.New(def, hotlimit.WithFactory(redislimit.Factory(newClient(t, srv), hotlimit.WithClock(clock.Load), redislimit.WithTimeout(exactTimeout))))
		require.NoError(t, err)
		require.NoError(t, svc.ConfigureUser("alice", user))
		require.NoError(t, svc.ConfigureAPI("pay", api))
		require.NoError(t, svc.ConfigureUserAPI("alice", "pay", pair))
		svcs[i] = svc
	}
	for _, tc := range []struct {
		user, api string
		want      hotlimit.Config
	}{
		{"alice", "pay", pair},
		{"alice", "search", user},
		{"bob", "pay", api},
		{"carol", "pay", api}, // a pair of its own
		{"bob", "search", def},
	} {
		for _, svc := range svcs {
			require.Equal(t, tc.want, svc.Resolve(tc.user, tc.api))
		}
		var passed atomic.Int64
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for range 4 {
					if svcs[g%2].Allow(tc.user, tc.api) {
						passed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		assert.EqualValues(t, tc.want.Limit, passed.Load(), "(%s, %s) under %v", tc.user, tc.api, tc.want)
	}
}

// TestServiceMultiLimit: a rule of two limits, a token bucket of 5 a minute
// and a sliding log of 3 a second, on Redis through Factory. The service's
// composite admits only what both admit and refunds the token bucket when
// the log denies: with a frozen clock 3 pass in all, from two instances; a
// second later the log is empty and the bucket still holds the 2 that the 17
// denied requests did not keep, and then nothing more.
func TestServiceMultiLimit(t *testing.T) {
	srv := redistest.Start(t)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	rules := service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Minute},
		{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Second},
	}}
	svcs := make([]*service.Service, 2)
	for i := range svcs {
		svc, err := service.NewFromRules(rules, hotlimit.WithFactory(redislimit.Factory(newClient(t, srv), hotlimit.WithClock(clock.Load), redislimit.WithTimeout(exactTimeout))))
		require.NoError(t, err)
		svcs[i] = svc
	}
	phase := func() int {
		var passed atomic.Int64
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for range 5 {
					if svcs[g%2].Allow("u", "a") {
						passed.Add(1)
					}
				}
			})
		}
		wg.Wait()
		return int(passed.Load())
	}
	assert.Equal(t, 3, phase(), "the log's 3")
	clock.Add(int64(time.Second))
	assert.Equal(t, 2, phase(), "the bucket's last 2: the denials were refunded")
	clock.Add(int64(time.Second))
	assert.Zero(t, phase(), "the bucket is empty")
}

// TestTakeContextCanceled: a context that has ended gives its error and the
// failure policy's decision, and does not count against the breaker. (The
// call after it has exactTimeout: its client's first dial and EVAL must not
// pass the default timeout on a loaded machine, which would open the
// breaker of one failure too.)
func TestTakeContextCanceled(t *testing.T) {
	srv := redistest.Start(t)
	lim := newExact(t, newClient(t, srv), hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute},
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(1, time.Minute))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := lim.TakeContext(ctx, "k", 1)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.False(t, d.Allowed)
	assert.True(t, take(t, lim, "k", 1).Allowed, "the breaker stayed closed")
}

// TestCanLease: CanLease names exactly the algorithms whose limiters New
// builds with a lease, the others' being rejected with an error that names
// the ones that can.
func TestCanLease(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // New does not dial
	t.Cleanup(func() { _ = client.Close() })
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		assert.Equal(t, slices.Contains(leasing, a), redislimit.CanLease(a), "%v", a)
		_, err := redislimit.New(client, hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second}, redislimit.WithLease(2, time.Second))
		if redislimit.CanLease(a) {
			assert.NoError(t, err, "%v", a)
		} else {
			assert.ErrorContains(t, err, "a lease needs TokenBucket, GCRA or FixedWindow", "%v", a)
		}
	}
}
