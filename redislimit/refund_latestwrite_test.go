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

// TestTokenBucketRefundCountsUpToTheKeysLatestWrite: a token bucket's
// refund deducts what the key refilled from r.At up to the later of the
// clock and the key's latest write, whose state is refilled up to it, as
// tokenbucket.Limiter.Refund does; and a clock behind r.At on a key not
// written since gives all of it back. At 5 per second, a Take of 5 at t0,
// a Take of 2 at t0 + 400 ms (the 2 tokens refilled) and the first Take's
// refund read 300 ms behind that write give back 5 less the 2 refilled
// by then: 3 tokens, not the 4.5 that counting to the clock alone gives.
// RefundNowContext of a Take of 1 at that clock, behind the write, gives
// back 1 less 300 ms of refill, nothing. A refund read 1 s behind a Take
// on a key not written since gives all of it back.
func TestTokenBucketRefundCountsUpToTheKeysLatestWrite(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	var clock atomic.Int64
	lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("latestwrite:"),
		redislimit.WithFailPolicy(redislimit.FailClosed))
	ms := int64(time.Millisecond)
	t0 := 1000 * int64(time.Second)

	clock.Store(t0)
	d, r := lim.TakeReceipt("written", 5)
	require.True(t, d.Allowed)
	clock.Store(t0 + 400*ms)
	require.True(t, take(t, lim, "written", 2).Allowed, "the 2 tokens refilled by t0 + 400 ms")
	clock.Store(t0 + 100*ms)
	require.NoError(t, lim.RefundContext(ctx, "written", r))
	assert.Equal(t, 3, take(t, lim, "written", 0).Remaining, "5 back less the 2 refilled up to the key's write at t0 + 400 ms")

	require.True(t, take(t, lim, "written", 1).Allowed)
	require.NoError(t, lim.RefundNowContext(ctx, "written", 1))
	assert.Equal(t, 2, take(t, lim, "written", 0).Remaining, "1 back less the 1.5 refilled from the clock to the key's write: nothing")

	clock.Store(t0)
	d, r = lim.TakeReceipt("unwritten", 3)
	require.True(t, d.Allowed)
	clock.Store(t0 - int64(time.Second))
	require.NoError(t, lim.RefundContext(ctx, "unwritten", r))
	assert.Equal(t, 5, take(t, lim, "unwritten", 0).Remaining, "all 3 back: nothing refilled since the Take")
}
