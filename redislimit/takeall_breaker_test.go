package redislimit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestTakeAllFailureCountsOnceForTheBreaker: a TakeAll of several takes
// under one limiter that Redis does not answer (nothing listening, or a
// frozen Redis past the timeout) is one failed round trip, and counts one
// failure for the limiter's breaker, not one per take: with a threshold of
// 3, the breaker stays closed for two more failed calls and opens at the
// third. A TakeAll under two limiters counts one for each of their
// breakers.
func TestTakeAllFailureCountsOnceForTheBreaker(t *testing.T) {
	const takes = 5
	for _, tc := range []struct {
		name   string
		client func(t *testing.T) *redis.Client
	}{
		{"refused", func(t *testing.T) *redis.Client {
			client := redis.NewClient(&redis.Options{Addr: deadAddr(t), ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			return client
		}},
		{"timeout", func(t *testing.T) *redis.Client {
			srv := redistest.Start(t)
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			require.NoError(t, client.Ping(context.Background()).Err()) // connected before Redis freezes
			srv.Pause()
			t.Cleanup(srv.Resume)
			return client
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client(t)
			opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
				redislimit.WithTimeout(50 * time.Millisecond), redislimit.WithBreaker(3, time.Hour)}
			one := newLimiter(t, client, faultConfig, opts...)
			two := newLimiter(t, client, faultConfig, append(opts, redislimit.WithPrefix("two:"))...)
			var all []redislimit.Take
			for i := range takes {
				all = append(all, redislimit.Take{Limiter: one, Key: fmt.Sprintf("k%d", i), N: 1})
				all = append(all, redislimit.Take{Limiter: two, Key: fmt.Sprintf("k%d", i), N: 1})
			}
			redislimit.TakeAll(context.Background(), all)
			for i, tk := range all {
				require.Error(t, tk.Err, "take %d", i)
				assert.NotErrorIs(t, tk.Err, redislimit.ErrBreakerOpen, "take %d: the breaker was closed when the round trip was sent", i)
			}
			for _, lim := range []*redislimit.Limiter{one, two} {
				for i := range 2 {
					_, err := lim.TakeContext(context.Background(), "after", 1)
					require.Error(t, err)
					assert.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "call %d after the TakeAll: its %d takes counted as one failure", i+1, takes)
				}
				_, err := lim.TakeContext(context.Background(), "after", 1)
				assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the third failure in a row opens it")
			}
		})
	}
}

// TestTakeAllClusterLookupFailsOnce: on a cluster client that cannot load
// its slot map (no node answers), the first take of a TakeAll whose
// lookup of its key's master fails stands for the others on the same
// client: they fail with its error instead of each asking again (each a
// wait of up to the timeout, one after the other), and the breaker of each
// limiter counts one failure, as for one failed round trip: with a
// threshold of 3, it stays closed for two more failed calls.
func TestTakeAllClusterLookupFailsOnce(t *testing.T) {
	const takes, timeout = 5, 100 * time.Millisecond
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{deadAddr(t)}, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
		redislimit.WithTimeout(timeout), redislimit.WithBreaker(3, time.Hour)}
	one := newLimiter(t, client, faultConfig, opts...)
	two := newLimiter(t, client, faultConfig, append(opts, redislimit.WithPrefix("two:"))...)
	var all []redislimit.Take
	for i := range takes {
		all = append(all, redislimit.Take{Limiter: one, Key: fmt.Sprintf("k%d", i), N: 1})
		all = append(all, redislimit.Take{Limiter: two, Key: fmt.Sprintf("k%d", i), N: 1})
	}
	start := time.Now()
	redislimit.TakeAll(context.Background(), all)
	took := time.Since(start)
	for i, tk := range all {
		require.Error(t, tk.Err, "take %d", i)
		assert.NotErrorIs(t, tk.Err, redislimit.ErrBreakerOpen, "take %d: the breaker was closed when the TakeAll began", i)
		assert.False(t, tk.Decision.Allowed, "take %d: FailClosed", i)
	}
	// How long it took is logged, not asserted: on a loaded machine a wall-clock
	// bound flakes. That the lookups counted once (below, and no take above
	// found the breaker open) is what shows they were made once.
	t.Logf("TakeAll of %d takes took %v (timeout %v)", len(all), took, timeout)
	for _, lim := range []*redislimit.Limiter{one, two} {
		for i := range 2 {
			_, err := lim.TakeContext(context.Background(), "after", 1)
			require.Error(t, err)
			assert.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "call %d after the TakeAll: its failed lookups counted as one failure", i+1)
		}
		_, err := lim.TakeContext(context.Background(), "after", 1)
		assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the third failure in a row opens it")
	}
}

// TestTakeAllBreakerRefusalIsNoLookupFailure: on a cluster client that
// cannot load its slot map, a take whose limiter's breaker is open is
// refused without asking anything, and its refusal stands for no other
// take of the TakeAll: the next take, under another limiter of the same
// client whose breaker is closed, looks its key's master up itself, and
// fails with that lookup's error, not ErrBreakerOpen; a later take of that
// limiter fails with the same error, and its breaker counts that one
// failed lookup, as for one failed round trip: with a threshold of 2, it
// stays closed for one more failed call.
func TestTakeAllBreakerRefusalIsNoLookupFailure(t *testing.T) {
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{deadAddr(t)}, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(100 * time.Millisecond)}
	open := newLimiter(t, client, faultConfig, append(opts, redislimit.WithBreaker(1, time.Hour))...)
	closed := newLimiter(t, client, faultConfig, append(opts, redislimit.WithBreaker(2, time.Hour), redislimit.WithPrefix("closed:"))...)
	_, err := open.TakeContext(context.Background(), "k", 1)
	require.Error(t, err)
	require.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "the failed lookup")
	_, err = open.TakeContext(context.Background(), "k", 1)
	require.ErrorIs(t, err, redislimit.ErrBreakerOpen, "one failed lookup opened the breaker of threshold 1")

	takes := []redislimit.Take{{Limiter: open, Key: "a", N: 1}, {Limiter: closed, Key: "a", N: 1}, {Limiter: closed, Key: "b", N: 1}}
	redislimit.TakeAll(context.Background(), takes)
	assert.ErrorIs(t, takes[0].Err, redislimit.ErrBreakerOpen, "the open breaker's take")
	for i, tk := range takes[1:] {
		require.Error(t, tk.Err, "take %d", i+1)
		assert.NotErrorIs(t, tk.Err, redislimit.ErrBreakerOpen, "take %d: the closed breaker's take looked its master up", i+1)
		assert.False(t, tk.Decision.Allowed, "take %d: FailClosed", i+1)
	}
	assert.Equal(t, takes[1].Err.Error(), takes[2].Err.Error(), "the second take of the closed breaker's limiter has the first one's lookup error")

	_, err = closed.TakeContext(context.Background(), "after", 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "the TakeAll counted one failed lookup")
	_, err = closed.TakeContext(context.Background(), "after", 1)
	assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the second failure in a row opens it")
}
