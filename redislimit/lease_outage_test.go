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

// TestLeaseWhileRedisIsDown: while Redis is down, a live lease still spends
// what Redis took for it, without error, and then FailClosed denies: an
// instance admits exactly the lease's leftovers during the outage, which
// Redis counted before it went down.
func TestLeaseWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clocked := hotlimit.WithClock(now.Load)
	leased := newLimiter(t, newClient(t, srv), c, clocked, redislimit.WithLease(size, time.Second),
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(exactTimeout), redislimit.WithBatch(0, 0))

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
	srv.Kill()
	for i := range size {
		d, err := leased.TakeContext(context.Background(), "k", 1)
		require.NoError(t, err, "spend %d: from the lease, Redis not asked", i)
		require.True(t, d.Allowed, "spend %d", i)
	}
	d, err := leased.TakeContext(context.Background(), "k", 1)
	assert.Error(t, err, "the lease is spent: Redis is asked")
	assert.False(t, d.Allowed, "FailClosed")
}

// TestLeaseReportWhileRedisIsDown: a report (n = 0) on an instance whose
// live lease spends through an outage counts what the lease has left, as
// it does while Redis answers: under FailClosed the report is no 0
// followed by requests that pass, and its error still says Redis failed.
func TestLeaseReportWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	const size = 5
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour}
	var now atomic.Int64
	now.Store(int64(time.Hour))
	clocked := hotlimit.WithClock(now.Load)
	leased := newLimiter(t, newClient(t, srv), c, clocked, redislimit.WithLease(size, time.Second),
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithTimeout(exactTimeout), redislimit.WithBatch(0, 0))

	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
	srv.Kill()
	for left := size; left > 0; left-- {
		d, err := leased.TakeContext(context.Background(), "k", 0)
		assert.Error(t, err, "Redis is down")
		assert.Equal(t, left, d.Remaining, "the report counts the lease's %d", left)
		require.True(t, take(t, leased, "k", 1).Allowed, "and the lease admits them")
	}
	d, err := leased.TakeContext(context.Background(), "k", 0)
	assert.Error(t, err)
	assert.Zero(t, d.Remaining, "the lease is spent")
	d, err = leased.TakeContext(context.Background(), "k", 1)
	assert.Error(t, err)
	assert.False(t, d.Allowed, "FailClosed")
}
