package redislimit_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestMadeUpReceipts: receipts no take gave (times at the ends of int64, N
// up to math.MaxInt), refunded to an exhausted key on the caller's clock and
// on Redis's, are no script error, and give back at most a fresh key's
// quota: the key then admits at most its burst, never more.
func TestMadeUpReceipts(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	receipts := []hotlimit.Receipt{
		{N: math.MaxInt, At: math.MaxInt64}, {N: math.MaxInt, At: math.MinInt64},
		{N: 3, At: math.MaxInt64}, {N: 1, At: 0}, {N: math.MaxInt, At: -1},
	}
	for _, clock := range []string{"fake", "redis"} {
		for _, a := range algorithms {
			t.Run(clock+"/"+a.String(), func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour) + 1)
				opts := []hotlimit.Option{redislimit.WithFailPolicy(redislimit.FailClosed)}
				if clock == "fake" {
					opts = append(opts, hotlimit.WithClock(now.Load))
				}
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Hour}
				lim := newExact(t, client, c, opts...)
				key := clock + a.String()
				require.True(t, take(t, lim, key, 4).Allowed)
				for _, r := range receipts {
					require.NoError(t, lim.RefundContext(ctx, key, r), "%+v", r)
				}
				passed := 0
				for range 10 {
					if take(t, lim, key, 1).Allowed {
						passed++
					}
				}
				assert.LessOrEqual(t, passed, c.Limit, "at most a fresh key's quota")
			})
		}
	}
}
