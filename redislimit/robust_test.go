package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundAfterStateLost: a receipt taken before Redis lost the key's state
// (FLUSHALL, a restart, an eviction) gives nothing back to the key that a
// later take created: that key never counted the receipt's requests, and a
// refund to it would admit more than a fresh key's quota. The sliding log's
// sorted set keeps no such time, and is left out.
func TestRefundAfterStateLost(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range algorithms {
		if a == hotlimit.SlidingLog {
			continue
		}
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
