package redislimit_test

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// closedClient returns a client that fails every call at once, as a Redis
// that is down does, without the network.
func closedClient(t *testing.T) *redis.Client {
	client := redis.NewClient(&redis.Options{Addr: deadAddr(t)})
	require.NoError(t, client.Close())
	return client
}

// TestFailLocalSweepsItsKeys: the keys that FailLocal decided in memory
// while Redis was down are evicted by Sweep once idle, instead of staying
// in the process for good.
func TestFailLocalSweepsItsKeys(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	lim := newLimiter(t, closedClient(t), faultConfig, hotlimit.WithClock(now.Load))
	const keys = 100
	for i := range keys {
		d, err := lim.TakeContext(context.Background(), "k"+strconv.Itoa(i), 1)
		require.Error(t, err)
		require.True(t, d.Allowed, "key %d: a fresh key passes in memory", i)
	}
	assert.Equal(t, keys, lim.Len(), "the keys held in memory")
	now.Add(int64(2 * faultConfig.Window))
	assert.Equal(t, keys, lim.Sweep(), "every idle key of the FailLocal limiter is evicted")
	assert.Zero(t, lim.Len())
	assert.Zero(t, lim.Sweep(), "nothing is left to evict")
}

// TestFailLocalMaxKeys: hotlimit.WithMaxKeys caps the keys the FailLocal
// limiter holds, as it caps an in-memory limiter's: with the cap reached and
// no key idle, a new key is denied.
func TestFailLocalMaxKeys(t *testing.T) {
	const maxKeys = 5
	lim := newLimiter(t, closedClient(t), faultConfig, frozenClock(), hotlimit.WithMaxKeys(maxKeys))
	for i := range maxKeys {
		d, _ := lim.TakeContext(context.Background(), "k"+strconv.Itoa(i), 1)
		require.True(t, d.Allowed, "key %d: below the cap", i)
	}
	d, err := lim.TakeContext(context.Background(), "one-too-many", 1)
	require.Error(t, err)
	assert.False(t, d.Allowed, "a key past the cap is denied")
	d, _ = lim.TakeContext(context.Background(), "k0", 1)
	assert.True(t, d.Allowed, "a held key still decides")
}

// TestFailClosedRetryAfter: a FailClosed denial always says when to retry,
// breaker or not: the breaker's cooldown, else the timeout. A denial with
// RetryAfter 0 would send Retry-After: 0 and make hotlimit.Wait ask again
// at once.
func TestFailClosedRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []hotlimit.Option
		want time.Duration
	}{
		{"breaker", []hotlimit.Option{redislimit.WithBreaker(3, 2*time.Second)}, 2 * time.Second},
		{"no breaker", []hotlimit.Option{redislimit.WithBreaker(0, 0), redislimit.WithTimeout(50 * time.Millisecond)}, 50 * time.Millisecond},
		{"no breaker, no timeout", []hotlimit.Option{redislimit.WithBreaker(0, 0), redislimit.WithTimeout(0)}, redislimit.DefaultTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := append([]hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailClosed)}, tc.opts...)
			lim := newLimiter(t, closedClient(t), faultConfig, opts...)
			for i := range 5 {
				d, err := lim.TakeContext(context.Background(), "k", 1)
				require.Error(t, err)
				assert.False(t, d.Allowed, "call %d", i+1)
				assert.Equal(t, tc.want, d.RetryAfter, "call %d", i+1)
			}
			d, _ := lim.TakeContext(context.Background(), "k", faultLimit+1)
			assert.Equal(t, hotlimit.Never, d.RetryAfter, "more than the burst never passes")
		})
	}
}

// TestLeaseResetAfter: a request spent from a lease reports the key's
// ResetAfter, as a limiter without a lease sees it in Redis at that
// moment, not zero (a key at its full quota): Redis counted the leased
// requests when it granted them.
func TestLeaseResetAfter(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var clock atomic.Int64
			t0 := 7*int64(time.Hour) + int64(time.Second)
			clock.Store(t0)
			clocked := hotlimit.WithClock(clock.Load)
			leased := newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(5, time.Minute))
			other := newExact(t, newClient(t, srv), c, clocked)

			d := take(t, leased, "k", 1) // Redis: 1 + 5 leased
			require.True(t, d.Allowed)
			require.Equal(t, 1, leased.Len())
			assert.Equal(t, take(t, other, "k", 0).ResetAfter, d.ResetAfter)

			for i := range 3 {
				clock.Add(int64(time.Second))
				d := take(t, leased, "k", 1)
				require.True(t, d.Allowed)
				assert.Equal(t, 4-i, d.Remaining, "what the lease has left")
				want := take(t, other, "k", 0).ResetAfter
				assert.Positive(t, want)
				assert.Equal(t, want, d.ResetAfter, "spend %d from the lease", i+1)
			}
		})
	}
}

// TestNewRejectsScope: a Config with a scope is rejected whatever the
// failure policy, with an error that names the field, as
// service.NewLimiter rejects it: a limiter on its own counts the keys it is
// given. It was rejected only with FailLocal, by the in-process limiter.
func TestNewRejectsScope(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser}
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		_, err := redislimit.New(closedClient(t), c, redislimit.WithFailPolicy(p))
		require.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", p)
		assert.Contains(t, err.Error(), "Config.Scope", "%v", p)
		assert.NotContains(t, err.Error(), "FailLocal", "%v", p)
	}
}

// TestHugeDurationsSaturate: a breaker cooldown or a lease ttl as long as a
// time.Duration holds keeps the breaker open and the lease live, instead of
// overflowing the deadline into the past (a breaker that never opens, a
// lease that is expired from the start).
func TestHugeDurationsSaturate(t *testing.T) {
	t.Run("breaker", func(t *testing.T) {
		lim := newLimiter(t, closedClient(t), faultConfig, redislimit.WithBreaker(1, math.MaxInt64))
		_, err := lim.TakeContext(context.Background(), "k", 1)
		require.Error(t, err)
		require.NotErrorIs(t, err, redislimit.ErrBreakerOpen)
		for i := range 3 {
			_, err := lim.TakeContext(context.Background(), "k", 1)
			assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "call %d after the failure", i+2)
		}
	})
	t.Run("lease", func(t *testing.T) {
		srv := redistest.Start(t)
		var clock atomic.Int64
		clock.Store(redislimit.ClockRange) // the latest reading the scripts take
		c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Hour}
		leased := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load), redislimit.WithLease(5, math.MaxInt64))
		other := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load))
		require.True(t, take(t, leased, "k", 1).Allowed) // Redis: 1 + 5 leased
		for i := range 5 {
			d := take(t, leased, "k", 1)
			require.True(t, d.Allowed)
			assert.Equal(t, 4-i, d.Remaining, "spend %d: from the lease", i+1)
		}
		assert.Equal(t, 4, take(t, other, "k", 0).Remaining, "Redis gave nothing more")
	})
}

// TestFailLocalAutoSweepDefaultAndOff: the FailLocal limiter auto-sweeps at
// service.DefaultAutoSweep by default, as a service's limiters do, and
// WithAutoSweep(0) turns it off: past the threshold of idle keys, the first
// holds fewer than it was given, the second holds them all.
func TestFailLocalAutoSweepDefaultAndOff(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts more keys than service.DefaultAutoSweep")
	}
	keys := service.DefaultAutoSweep + 1000 // past the threshold by a few sweep steps
	for _, tc := range []struct {
		name string
		opts []hotlimit.Option
		held func(t *testing.T, n int)
	}{
		{"default", nil, func(t *testing.T, n int) { assert.Less(t, n, keys, "idle keys were swept") }},
		{"off", []hotlimit.Option{hotlimit.WithAutoSweep(0)}, func(t *testing.T, n int) { assert.Equal(t, keys, n, "nothing swept") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			lim := newLimiter(t, closedClient(t), faultConfig, append([]hotlimit.Option{hotlimit.WithClock(now.Load)}, tc.opts...)...)
			for i := range keys {
				if i == service.DefaultAutoSweep {
					now.Add(int64(2 * faultConfig.Window)) // every key so far is idle
				}
				_, _ = lim.TakeContext(context.Background(), "k"+strconv.Itoa(i), 1)
			}
			tc.held(t, lim.Len())
		})
	}
}

// TestFailurePolicyReportRemaining: while Redis cannot decide, a report
// (Take of 0) tells whether one request would pass by Remaining > 0 under
// FailLocal and FailClosed, as hotlimit.Limiter says, but not under
// FailOpen, whose decisions know nothing of the key: it passes every
// request with Remaining 0, which the interface's doc names as the
// exception, as it does a composite with such a child.
func TestFailurePolicyReportRemaining(t *testing.T) {
	for _, p := range []redislimit.FailPolicy{redislimit.FailLocal, redislimit.FailOpen, redislimit.FailClosed} {
		t.Run(p.String(), func(t *testing.T) {
			lim := newLimiter(t, closedClient(t), faultConfig, redislimit.WithFailPolicy(p), redislimit.WithBreaker(0, 0))
			for i := range faultLimit + 1 {
				report := lim.Take("k", 0)
				assert.True(t, report.Allowed, "report %d", i+1)
				pass := lim.Take("k", 1).Allowed
				if p == redislimit.FailOpen {
					assert.True(t, pass, "take %d", i+1)
					assert.Zero(t, report.Remaining, "report %d", i+1)
					continue
				}
				assert.Equal(t, report.Remaining > 0, pass, "take %d after a report of Remaining %d", i+1, report.Remaining)
			}
		})
	}
	t.Run("composite with a FailOpen child", func(t *testing.T) {
		open := newLimiter(t, closedClient(t), faultConfig, redislimit.WithFailPolicy(redislimit.FailOpen), redislimit.WithBreaker(0, 0))
		inMemory, err := service.NewLimiter(faultConfig)
		require.NoError(t, err)
		both, err := composite.New(inMemory, open)
		require.NoError(t, err)
		report := both.Take("k", 0)
		assert.True(t, report.Allowed)
		assert.Zero(t, report.Remaining, "the FailOpen child's")
		assert.True(t, both.Take("k", 1).Allowed)
	})
}
