package redislimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestSlidingLogAtWholeSeconds: a sliding log whose clock reads whole
// seconds, in nanoseconds, logs times such as 1e9, which some servers write
// back as the score "1e+09" and others as "1000000000": the script reads
// the newest score (to log after it, and to judge the set its own) and a
// denial's oldest one (its RetryAfter) in either form. Taken to the limit
// at 1 s, the key denies the next request for a second, half a second at
// 1.5 s, takes a refund of a request logged at 1 s, and at 2 s admits
// again the request that left the window.
func TestSlidingLogAtWholeSeconds(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	now := int64(time.Second)
	lim := newExact(t, client, hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Second},
		hotlimit.WithClock(func() int64 { return now }))

	d, r, err := lim.TakeReceiptContext(ctx, "k", 1)
	require.NoError(t, err)
	require.Equal(t, hotlimit.Receipt{N: 1, At: int64(time.Second)}, r)
	require.True(t, d.Allowed)
	d = take(t, lim, "k", 1)
	require.True(t, d.Allowed, "the second request passes")
	require.Equal(t, 0, d.Remaining)
	d = take(t, lim, "k", 1)
	require.False(t, d.Allowed, "the limit is taken at 1 s")
	require.Equal(t, time.Second, d.RetryAfter, "until the request logged at 1 s leaves the window")
	require.Equal(t, time.Second, d.ResetAfter)

	now = int64(1500 * time.Millisecond)
	d = take(t, lim, "k", 1)
	require.False(t, d.Allowed)
	require.Equal(t, 500*time.Millisecond, d.RetryAfter)
	require.NoError(t, lim.RefundContext(ctx, "k", r))
	d = take(t, lim, "k", 1)
	require.True(t, d.Allowed, "the refund of a request logged at 1 s counts")
	require.Equal(t, 0, d.Remaining)
	d = take(t, lim, "k", 1)
	require.False(t, d.Allowed)
	require.Equal(t, 500*time.Millisecond, d.RetryAfter, "the oldest in the window was logged at 1 s")

	now = int64(2 * time.Second)
	d = take(t, lim, "k", 1)
	require.True(t, d.Allowed, "the one logged at 1 s has left the window")
	require.Equal(t, 0, d.Remaining, "the one logged at 1.5 s is still in it")
	d = take(t, lim, "k", 1)
	require.False(t, d.Allowed)
	require.Equal(t, 500*time.Millisecond, d.RetryAfter)
}
