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

// TestLeaseSpendResetAfterZeroOnceFull: a take spent from a live lease
// after the time its key is full again reports a ResetAfter of zero, as
// Redis's report for the key does, not the negative time since. A limit of
// 10 a second with a burst of 10 refills a request per 100 ms: a take of 1
// that leases 2 more leaves the key full 300 ms later, and the minute's
// lease outlives that.
func TestLeaseSpendResetAfterZeroOnceFull(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second}
			var clock atomic.Int64
			clock.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(clock.Load)
			prefix := redislimit.WithPrefix(fmt.Sprintf("spentfull%v:", a))
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(2, time.Minute))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			d := take(t, leased, "k", 1) // Redis: 1 + 2 leased
			require.True(t, d.Allowed)
			require.Equal(t, 300*time.Millisecond, d.ResetAfter, "3 taken, 100 ms each")

			clock.Add(int64(400 * time.Millisecond))
			require.Zero(t, take(t, other, "k", 0).ResetAfter, "Redis's key is full again")
			d = take(t, leased, "k", 1)
			require.True(t, d.Allowed)
			assert.Equal(t, 1, d.Remaining, "what the lease has left")
			assert.Zero(t, d.ResetAfter, "a take from the lease past the key's full time")
		})
	}
}

// TestLeaseSpendReceiptAndResetFromTheLeaseTake: the receipt of a take spent from a
// lease names the time Redis took the lease, in nanoseconds, the same At as
// the receipt of the take that leased it, on Redis's clock (ticks of a
// microsecond) as on a limiter's clock: its refund goes back as of then.
// Its ResetAfter runs to when the key is full, counted from the lease's
// take: on a frozen clock the take's own, on Redis's clock no more than it
// and no less than it less the time since.
func TestLeaseSpendReceiptAndResetFromTheLeaseTake(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, a := range leasing {
		for _, withClock := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/clock=%v", a, withClock), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
				opts := []hotlimit.Option{redislimit.WithPrefix(fmt.Sprintf("spentat%v%v:", a, withClock)), redislimit.WithLease(3, time.Minute)}
				if withClock {
					t0 := int64(5*time.Hour + 123456789)
					opts = append(opts, hotlimit.WithClock(func() int64 { return t0 }))
				}
				leased := newExact(t, newClient(t, srv), c, opts...)

				begin := time.Now()
				d, first, err := leased.TakeReceiptContext(ctx, "k", 1) // Redis: 1 + 3 leased
				require.NoError(t, err)
				require.True(t, d.Allowed)
				reset := d.ResetAfter
				require.Equal(t, 1, leased.Len(), "a lease is held")
				d, spent, err := leased.TakeReceiptContext(ctx, "k", 2)
				require.NoError(t, err)
				require.True(t, d.Allowed)
				require.Equal(t, 1, d.Remaining, "spent from the lease")
				assert.Equal(t, hotlimit.Receipt{N: 2, At: first.At}, spent)
				if withClock {
					assert.Equal(t, reset, d.ResetAfter)
				} else {
					assert.LessOrEqual(t, d.ResetAfter, reset)
					assert.Greater(t, d.ResetAfter, reset-time.Since(begin)-time.Millisecond)
				}
			})
		}
	}
}
