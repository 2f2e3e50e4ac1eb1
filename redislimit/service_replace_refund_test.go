package redislimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceRefundAfterReplaceClosedTheLimiter: receipts taken from a
// leasing limiter, one in Redis and one from the lease, are given back in
// full after a Replace dropped and closed that limiter (which gave its
// lease's unspent requests back as it closed): the key is whole again, and
// not one request more, as the closed limiter still gives back, each call
// a round trip of its own.
func TestServiceRefundAfterReplaceClosedTheLimiter(t *testing.T) {
	srv := redistest.Start(t)
	const lease = 5
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 20, Window: time.Minute}
			clocked := frozenClock()
			prefix := redislimit.WithPrefix("replace-refund-" + a.String() + ":")
			other := newExact(t, newClient(t, srv), c, clocked, prefix)
			svc, err := service.New(c, clocked, hotlimit.WithFactory(redislimit.Factory(newClient(t, srv),
				redislimit.WithLease(lease, time.Hour), redislimit.WithTimeout(exactTimeout), prefix)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = svc.Close() })
			key := "1:u|a"
			left := func() int { return take(t, other, key, 0).Remaining }

			d, inRedis := svc.TakeReceipt("u", "a", 1)
			require.True(t, d.Allowed)
			d, fromLease := svc.TakeReceipt("u", "a", 2)
			require.True(t, d.Allowed)
			require.NotEqual(t, service.Receipt{}, fromLease)
			require.Equal(t, c.Limit-1-lease, left(), "Redis counts the first request and the lease")

			changed := c
			changed.Limit++
			require.NoError(t, svc.Replace(service.Rules{Default: service.Limits{changed}}))
			require.Equal(t, c.Limit-3, left(), "the closed limiter gave back its lease's 3 unspent")

			svc.Refund(fromLease)
			assert.Equal(t, c.Limit-1, left(), "the 2 spent from the lease come back")
			svc.Refund(inRedis)
			assert.Equal(t, c.Limit, left(), "and the 1 taken in Redis: whole, and no more")
		})
	}
}
