package redislimit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestGCRARefundBehindAtMoreThanItsBurstPerTickKeepsTheKey: a GCRA whose
// limit refills more than its burst per tick (a limit of 10 per tick, a
// burst of 2) stores, after a refund made with the clock behind the key's
// time, tokens below zero at a tick before it (a line that reads what it
// should at the key's time): its own state, not someone else's. The next
// take with the clock still behind is denied as the model denies it, not
// decided as a fresh, full key's.
func TestGCRARefundBehindAtMoreThanItsBurstPerTickKeepsTheKey(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: 1, Burst: 2}
	now := int64(1000)
	lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(func() int64 { return now }),
		redislimit.WithFailPolicy(redislimit.FailClosed), redislimit.WithBreaker(0, 0))
	m := newModel(c).(refundModel)
	ctx := context.Background()
	check := func(n int) (hotlimit.Decision, hotlimit.Receipt) {
		t.Helper()
		want := m.Take("k", n, now)
		d, r, err := lim.TakeReceiptContext(ctx, "k", n)
		require.NoError(t, err)
		assert.Equal(t, want, d, "Take(%d) at %d", n, now)
		return d, r
	}
	d, first := check(2) // the key is empty at 1000
	require.True(t, d.Allowed)
	now = 1001 // full again
	d, _ = check(1)
	require.True(t, d.Allowed)
	now = 995 // behind the key's time
	require.NoError(t, lim.RefundContext(ctx, "k", first))
	m.Refund("k", first, now)
	check(0)
	d, _ = check(1)
	assert.False(t, d.Allowed, "the key's own state, not a fresh key's")
}
