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

// TestCallerDeadlineOpensNoBreaker: against a frozen Redis (SIGSTOP), a
// call whose caller's own deadline is shorter than the limiter's timeout
// fails at that deadline, with the failure policy's decision, and counts
// for no breaker: the caller's context has ended, which says nothing of
// Redis, whether its timer or the socket's deadline (go-redis sets the
// context's deadline on the socket) comes first. With a threshold of 1, the
// breaker is still closed after many such calls, by Take and by TakeAll,
// and on a cluster client whose lookup of a key's master waits for the
// frozen node; then the one call that waits for the limiter's own timeout
// opens it, so the breaker was there to open.
func TestCallerDeadlineOpensNoBreaker(t *testing.T) {
	const calls, timeout, deadline = 20, 300 * time.Millisecond, 5 * time.Millisecond
	for _, tc := range []struct {
		name   string
		client func(t *testing.T, srv *redistest.Server) redis.UniversalClient
	}{
		{"node", func(t *testing.T, srv *redistest.Server) redis.UniversalClient {
			client := redis.NewClient(&redis.Options{Addr: srv.Addr, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			// Connected and the script loaded, before Redis freezes.
			take(t, newExact(t, client, faultConfig, frozenClock(), redislimit.WithPrefix("warm:")), "warm", 0)
			return client
		}},
		{"cluster lookup", func(t *testing.T, srv *redistest.Server) redis.UniversalClient {
			// Its slot map is never loaded: every lookup asks the frozen
			// node, and waits for the deadline.
			client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}, ContextTimeoutEnabled: true, MaxRetries: -1})
			t.Cleanup(func() { _ = client.Close() })
			return client
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			client := tc.client(t, srv)
			opts := []hotlimit.Option{frozenClock(), redislimit.WithFailPolicy(redislimit.FailClosed),
				redislimit.WithTimeout(timeout), redislimit.WithBreaker(1, time.Hour)}
			one := newLimiter(t, client, faultConfig, opts...)
			two := newLimiter(t, client, faultConfig, append(opts, redislimit.WithPrefix("two:"))...)
			srv.Pause()
			t.Cleanup(srv.Resume)

			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				d, err := one.TakeContext(ctx, fmt.Sprintf("k%d", i), 1)
				cancel()
				require.Error(t, err, "Take %d", i)
				require.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "Take %d: an earlier call past its caller's deadline opened the breaker", i)
				assert.False(t, d.Allowed, "Take %d: FailClosed", i)
			}
			for i := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				takes := []redislimit.Take{{Limiter: one, Key: fmt.Sprintf("a%d", i), N: 1}, {Limiter: two, Key: fmt.Sprintf("a%d", i), N: 1},
					{Limiter: one, Key: fmt.Sprintf("b%d", i), N: 1}}
				redislimit.TakeAll(ctx, takes)
				cancel()
				for j, tk := range takes {
					require.Error(t, tk.Err, "TakeAll %d, take %d", i, j)
					require.NotErrorIs(t, tk.Err, redislimit.ErrBreakerOpen, "TakeAll %d, take %d: an earlier call past its caller's deadline opened the breaker", i, j)
				}
			}

			for _, lim := range []*redislimit.Limiter{one, two} {
				_, err := lim.TakeContext(context.Background(), "own", 1)
				require.Error(t, err, "a call that waits for the limiter's timeout")
				assert.NotErrorIs(t, err, redislimit.ErrBreakerOpen, "the breaker was closed")
				_, err = lim.TakeContext(context.Background(), "own", 1)
				assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the limiter's own timeout is a failure: the breaker opened")
			}
		})
	}
}
