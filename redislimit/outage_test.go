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

// TestClusterFrozenBeforeSlotMapIsPrompt: a cluster client of default
// options (no ContextTimeoutEnabled, a 3 s read timeout) whose first call
// finds every node frozen (SIGSTOP: connections accepted, never answered)
// has no slot map yet, and looking up a key's master asks the nodes for
// one. That lookup, too, is bounded by the limiter's timeout: decisions
// come from the failure policy within it, not after the client's read
// timeouts, and from Redis again once the nodes answer.
func TestClusterFrozenBeforeSlotMapIsPrompt(t *testing.T) {
	cl := redistest.StartCluster(t, 3, 0)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DialerRetries: 1})
	t.Cleanup(func() { _ = client.Close() })
	lim := newLimiter(t, client, faultConfig, frozenClock(), redislimit.WithFailPolicy(redislimit.FailOpen),
		redislimit.WithBreaker(0, 0))

	for _, s := range cl.Nodes {
		s.Pause()
	}
	for i := range 3 {
		start := time.Now()
		d, err := lim.TakeContext(context.Background(), fmt.Sprintf("k%d", i), 1)
		took := time.Since(start)
		require.Error(t, err, "take %d with every node frozen", i+1)
		assert.Equal(t, "timeout", redislimit.Reason(err), "take %d: %v", i+1, err)
		assert.True(t, d.Allowed, "take %d: FailOpen admits", i+1)
		assert.Less(t, took, prompt, "take %d with every node frozen", i+1)
	}
	for _, s := range cl.Nodes {
		s.Resume()
	}
	require.Eventually(t, func() bool {
		_, err := lim.TakeContext(context.Background(), "back", 0)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "Redis decides again once the nodes answer")
}

// TestCloseFrozenRedisIsPrompt: a Limiter holding leases on many keys is
// closed while Redis is frozen (SIGSTOP), as a process shutting down during
// an outage would: each lease's give-back fails, and the breaker, open after
// three of them, turns the others away at once instead of each waiting for
// the timeout, so that Close returns within a few timeouts whatever the
// number of leases, with the errors. Refund then also answers at once,
// with ErrBreakerOpen, and gives back nothing, as a failed refund: it sends
// Redis nothing (counted by a hook, not timed, which a loaded machine's
// delays would make flaky).
func TestCloseFrozenRedisIsPrompt(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Hour}
	client := newClient(t, srv)
	sent := &roundTrips{}
	client.AddHook(sent)
	lim := newLimiter(t, client, c, frozenClock(), redislimit.WithLease(10, time.Hour),
		redislimit.WithBreaker(3, time.Hour))
	const keys = 30
	var r hotlimit.Receipt
	for i := range keys {
		var d hotlimit.Decision
		d, r = lim.TakeReceipt(fmt.Sprintf("k%d", i), 1)
		require.True(t, d.Allowed, "key %d", i)
	}
	require.Equal(t, keys, lim.Len(), "every key holds a lease")

	srv.Pause()
	t.Cleanup(srv.Resume)
	start := time.Now()
	err := lim.Close()
	took := time.Since(start)
	require.Error(t, err, "the give-backs fail")
	assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "the breaker turns the last give-backs away")
	assert.Less(t, took, prompt, "Close of %d leases against a frozen Redis", keys)

	before := sent.singles.Load() + sent.piped.Load()
	err = lim.RefundContext(context.Background(), "k0", r)
	assert.ErrorIs(t, err, redislimit.ErrBreakerOpen, "a refund while the breaker is open")
	assert.Equal(t, before, sent.singles.Load()+sent.piped.Load(), "commands sent to Redis by a refund while the breaker is open")
}
