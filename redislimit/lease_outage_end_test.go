package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestLeaseReportWhileBreakerOpenEndsAtExpiry: while the breaker is open, a
// report counts what the key's lease has left only while the lease is
// live: at the tick it expires, as a spend from it no longer passes, the
// report counts none of it.
func TestLeaseReportWhileBreakerOpenEndsAtExpiry(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	start := int64(time.Hour)
	now.Store(start)
	clocked := hotlimit.WithClock(now.Load)
	leased := newLimiter(t, newClient(t, srv), c, clocked, redislimit.WithLease(size, time.Second),
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(exactTimeout), redislimit.WithBatch(0, 0),
		redislimit.WithBreaker(1, time.Hour))

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased, until start + 1s")
	srv.Kill()
	d, err := leased.TakeContext(context.Background(), "k", 0)
	require.Error(t, err, "Redis is down: the breaker opens")
	require.NotErrorIs(t, err, redislimit.ErrBreakerOpen)
	require.Equal(t, size, d.Remaining, "the live lease's leftovers")

	now.Store(start + int64(time.Second) - 1)
	d, err = leased.TakeContext(context.Background(), "k", 0)
	require.ErrorIs(t, err, redislimit.ErrBreakerOpen)
	assert.Equal(t, size, d.Remaining, "a tick before the lease expires")

	now.Store(start + int64(time.Second))
	d, err = leased.TakeContext(context.Background(), "k", 0)
	require.ErrorIs(t, err, redislimit.ErrBreakerOpen)
	assert.Zero(t, d.Remaining, "the lease expired")
	d, err = leased.TakeContext(context.Background(), "k", 1)
	require.ErrorIs(t, err, redislimit.ErrBreakerOpen)
	assert.False(t, d.Allowed, "nor does it admit")
}
