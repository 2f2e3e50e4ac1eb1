package redislimit_test

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceLeaseOnCloseAndReplace: a service built with a leasing
// Factory holds a lease on a hot pair. Close gives the unspent requests
// back to Redis, for every algorithm that leases. A Replace that no rule
// uses the Config in any more drops its limiter without Close, as the
// service's doc says: its lease is not given back, even once the limiter is
// collected, so that another instance on the same Config finds the leased
// requests taken (under-admission) until the key refills or its window
// ends, never more than the limit.
func TestServiceLeaseOnCloseAndReplace(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 20, Window: time.Minute}
			var now atomic.Int64
			now.Store(int64(time.Hour) + 1)
			clocked := hotlimit.WithClock(now.Load)
			other := newExact(t, newClient(t, srv), c, clocked, redislimit.WithPrefix(a.String()+":"))
			newService := func() *service.Service {
				svc, err := service.New(c, clocked, hotlimit.WithFactory(redislimit.Factory(newClient(t, srv),
					redislimit.WithLease(lease, time.Hour), redislimit.WithTimeout(exactTimeout), redislimit.WithPrefix(a.String()+":"))))
				require.NoError(t, err)
				return svc
			}
			key := "1:u|a" // the pair (u, a)
			left := func() int { return take(t, other, key, 0).Remaining }

			svc := newService()
			for range 3 {
				require.True(t, svc.Allow("u", "a"))
			}
			assert.Equal(t, c.Limit-1-lease, left(), "Redis counts the first request and the lease")
			require.NoError(t, svc.Close())
			assert.Equal(t, c.Limit-3, left(), "Close gives back the 3 unspent")

			svc = newService()
			t.Cleanup(func() { _ = svc.Close() })
			require.True(t, svc.Allow("u", "b")) // a lease on the pair (u, b)
			bKey := "1:u|b"
			assert.Equal(t, c.Limit-1-lease, take(t, other, bKey, 0).Remaining)
			changed := c
			changed.Limit++
			require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{changed}}))
			for range 3 {
				runtime.GC() // the dropped limiter is collected; its batcher stops
			}
			assert.Equal(t, c.Limit-1-lease, take(t, other, bKey, 0).Remaining,
				"the dropped limiter's lease is not given back")
			for i := range c.Limit - 1 - lease {
				require.True(t, other.Allow(bKey), "request %d of the other instance", i)
			}
			assert.False(t, other.Allow(bKey), "the lease's requests are still taken: under-admission")
			now.Add(int64(c.Window))
			assert.Equal(t, c.Limit, left(), "a window later the key is full: "+strconv.Itoa(c.Limit))
			assert.Equal(t, c.Limit, take(t, other, bKey, 0).Remaining, "a window later the lease's requests are back")
		})
	}
}
