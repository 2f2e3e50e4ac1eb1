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

// TestRefundNowContext: a give-back of requests taken now, with no
// receipt, returns them to the key as its clock reads now, for every
// algorithm, by Redis's TIME and by an injected clock: a key that spent its
// burst passes the n given back, and no more. n < 1 gives back nothing, and
// a give-back never lifts a key above a fresh one's quota.
func TestRefundNowContext(t *testing.T) {
	eachAlgorithmAndClock(t, func(t *testing.T, lim *redislimit.Limiter) {
		burst := lim.Burst()
		require.True(t, take(t, lim, "k", burst).Allowed, "the burst")
		require.False(t, take(t, lim, "k", 1).Allowed, "spent")
		require.NoError(t, lim.RefundNowContext(context.Background(), "k", 0))
		require.NoError(t, lim.RefundNowContext(context.Background(), "k", -1))
		assert.False(t, take(t, lim, "k", 1).Allowed, "n < 1 gives back nothing")
		require.NoError(t, lim.RefundNowContext(context.Background(), "k", 2))
		assert.True(t, take(t, lim, "k", 2).Allowed, "the 2 given back")
		assert.False(t, take(t, lim, "k", 1).Allowed, "and no more")
		require.NoError(t, lim.RefundNowContext(context.Background(), "fresh", 3))
		assert.Equal(t, burst-1, take(t, lim, "fresh", 1).Remaining, "a fresh key's quota, no more")
	})
}

// eachAlgorithmAndClock runs f in a subtest for every algorithm, by Redis's
// TIME and by an injected clock, on a limiter of 4 a day (a window Redis's
// TIME does not see end during the test) whose prefix is the subtest's own,
// so that each subtest's keys are fresh.
func eachAlgorithmAndClock(t *testing.T, f func(t *testing.T, lim *redislimit.Limiter)) {
	t.Helper()
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock atomic.Int64
	clock.Store(int64(time.Hour) + 1)
	for _, a := range algorithms {
		for _, withClock := range []bool{false, true} {
			name := fmt.Sprintf("%v/clock=%t", a, withClock)
			t.Run(name, func(t *testing.T) {
				opts := []hotlimit.Option{redislimit.WithPrefix(name + ":")}
				if withClock {
					opts = append(opts, hotlimit.WithClock(clock.Load))
				}
				f(t, newExact(t, client, hotlimit.Config{Algorithm: a, Limit: 4, Window: 24 * time.Hour}, opts...))
			})
		}
	}
}
