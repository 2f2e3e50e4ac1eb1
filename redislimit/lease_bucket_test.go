package redislimit_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestBucketLeaseEndedUnspentGivesBackLessItsRefill: a token bucket's or
// GCRA's lease that ends unspent gives its requests back less what the key
// refilled since Redis took them, as WithLease says (Redis cannot tell
// whether the key would have filled up meanwhile, which would have capped
// them): one that lived as long as the key takes to refill them gives back
// nothing. So a key whose leases keep ending unspent admits less than its
// limit by up to a lease's size per lease, not only by what the live
// leases hold; never more than its limit. Here an instance takes one
// request per ttl (each time a new lease of 5, the last one ended unspent)
// and another takes the rest: of the 10 requests the key refills per ttl,
// 5 pass.
func TestBucketLeaseEndedUnspentGivesBackLessItsRefill(t *testing.T) {
	srv := redistest.Start(t)
	const (
		size   = 5
		ttl    = 100 * time.Millisecond
		cycles = 10
	)
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 100, Window: time.Second} // 10 per ttl
			// In ms: 100 × 10^8 ns would wrap a 32-bit int.
			perTTL := c.Limit * int(ttl/time.Millisecond) / int(c.Window/time.Millisecond)
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix("unspent" + a.String() + ":")
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)
			drain := func() int {
				n := 0
				for take(t, other, "k", 1).Allowed {
					n++
				}
				return n
			}
			require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
			passed := 1 + drain()
			require.Equal(t, c.Limit-size, passed, "the full bucket, less the lease")
			for i := range cycles {
				now.Add(int64(ttl)) // the lease ends unspent; the key refills 10
				require.True(t, take(t, leased, "k", 1).Allowed, "cycle %d: 1 taken, 5 leased", i)
				redislimit.WaitRetired(leased)
				got := drain()
				assert.Equal(t, perTTL-1-size, got, "cycle %d: the ended lease's 5 did not come back", i)
				passed += 1 + got
			}
			elapsed := cycles * perTTL
			assert.LessOrEqual(t, passed, c.Limit+elapsed, "never more than the bucket allows")
			assert.Equal(t, c.Limit+elapsed-cycles*size-size, passed,
				"short by a lease per ended lease, and the live one")
		})
	}
}
