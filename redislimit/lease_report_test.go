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

// TestLeaseReportCountsTheLease: Take(key, 0) on an instance that holds a
// live lease of key reports as Remaining what Redis has left plus what the
// lease has left, as the call that granted the lease did: what this
// instance can still admit, so that a report of 0 is never followed by a
// request that passes. Once the lease has expired, Redis's alone.
func TestLeaseReportCountsTheLease(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Hour}
			var now atomic.Int64
			now.Store(int64(time.Hour))
			clocked := hotlimit.WithClock(now.Load)
			prefix := redislimit.WithPrefix(a.String() + ":")
			const ttl = time.Second
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			d := take(t, leased, "k", 1)
			require.True(t, d.Allowed)
			require.Equal(t, c.Limit-1, d.Remaining, "the granting call: Redis's 4 and the lease's 5")
			for range c.Limit - 1 - size {
				require.True(t, take(t, other, "k", 1).Allowed)
			}
			require.Zero(t, take(t, other, "k", 0).Remaining, "Redis has nothing left")
			assert.Equal(t, size, take(t, leased, "k", 0).Remaining, "the leasing instance can admit its lease")
			assert.True(t, take(t, leased, "k", 1).Allowed, "and does")
			assert.Equal(t, size-1, take(t, leased, "k", 0).Remaining)
			now.Add(int64(ttl)) // the lease expires
			assert.Equal(t, take(t, other, "k", 0).Remaining, take(t, leased, "k", 0).Remaining,
				"an expired lease is not reported")
		})
	}
}
