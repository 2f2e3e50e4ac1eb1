package redislimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundOfTakeBehindKeysMaking: a clock that stepped back behind the
// reading at which a key's state was made (Redis's TIME is a wall clock,
// which may) takes there, and refunds that take at once: the key is where
// the models say, for every algorithm that refunds by count or tokens;
// back where it was but for the token bucket, whose refund deducts what
// the key refilled from the take up to its latest write, the making (10 s
// at 4 per minute: 2/3 of a token, so 1 of the 2 whole tokens comes back).
// The state's making time, which turns away the refund of a take made
// before the state was lost, must not turn away a take the state counted
// itself.
func TestRefundOfTakeBehindKeysMaking(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter} {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			t1 := int64(time.Hour + 30*time.Second)
			clock.Store(t1)
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			m := newModel(c).(refundModel)
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load))
			require.True(t, take(t, lim, "k", 1).Allowed)
			m.Take("k", 1, t1)
			t0 := t1 - int64(10*time.Second)
			clock.Store(t0) // the same window, behind the key's making
			before := take(t, lim, "k", 0)
			d, r := lim.TakeReceipt("k", 2)
			require.True(t, d.Allowed)
			m.Take("k", 2, t0)
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			m.Refund("k", r, t0)
			after := take(t, lim, "k", 0)
			assert.Equal(t, m.Take("k", 0, t0), after, "the refund gave back what the model does")
			if a == hotlimit.TokenBucket {
				assert.Equal(t, before.Remaining-1, after.Remaining, "the 2 tokens less the 2/3 refilled up to the key's making")
			} else {
				assert.Equal(t, before, after, "the refund gave back what the take took")
			}
		})
	}
}

// TestRefundedKeyIsFreshBehind: a fixed window or sliding counter key whose
// requests were all refunded is a fresh key, whatever its window: a clock
// that then steps back two windows counts its next request in its own
// window, as a fresh key's, not in the key's later one, which would deny
// the requests of the window between.
func TestRefundedKeyIsFreshBehind(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const day = int64(24 * time.Hour)
	for _, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.SlidingCounter} {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(10*day + int64(time.Hour))
			c := hotlimit.Config{Algorithm: a, Limit: 1, Window: 24 * time.Hour}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load))
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			for _, at := range []int64{8*day + int64(time.Hour), 9*day + 2*int64(time.Hour)} {
				clock.Store(at)
				fresh := take(t, lim, "fresh", 1)
				require.True(t, fresh.Allowed)
				assert.Equal(t, fresh, take(t, lim, "k", 1), "at %v: a fresh key's decision", time.Duration(at))
			}
		})
	}
}

// TestReceiptAtLaterWindow: a fixed window or sliding counter key whose
// clock reads behind its window counts a take in that later window, so the
// receipt names the later window's start (as hotlimit.Receipt says), and
// refunding it at once gives the take back.
func TestReceiptAtLaterWindow(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const minute = int64(time.Minute)
	for _, a := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.SlidingCounter} {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(61*minute + 10*int64(time.Second))
			c := hotlimit.Config{Algorithm: a, Limit: 3, Window: time.Minute}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load))
			require.True(t, take(t, lim, "k", 1).Allowed)
			clock.Store(60*minute + 50*int64(time.Second)) // the window before
			before := take(t, lim, "k", 0)
			d, r := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			assert.Equal(t, hotlimit.Receipt{N: 1, At: 61 * minute}, r, "the later window's start")
			require.NoError(t, lim.RefundContext(ctx, "k", r))
			assert.Equal(t, before, take(t, lim, "k", 0), "the refund gave back what the take took")
		})
	}
}

// TestSlidingCounterRefundKeepsWindow: a sliding counter refund lowers the
// count of the receipt's window in the key's stored state and leaves that
// state's window as it is, as the model does: a clock that then steps back
// into the stored window sees it as stored, not as the next window it
// would have been moved to.
func TestSlidingCounterRefundKeepsWindow(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	c := hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 3, Window: time.Second}
	var clock atomic.Int64
	lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
	m := models.NewSlidingCounter(c.Limit, c.Window)
	ms := int64(time.Millisecond)
	check := func(n int, now int64) hotlimit.Decision {
		t.Helper()
		clock.Store(now)
		want := m.Take("k", n, now)
		d, r := lim.TakeReceipt("k", n)
		assert.Equal(t, want, d, "Take(%d) at %v", n, time.Duration(now))
		_ = r
		return d
	}
	check(2, 10500*ms)
	clock.Store(10600 * ms)
	d, r := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	m.Take("k", 1, 10600*ms)
	clock.Store(11200 * ms) // the next window: r's window is the previous one
	require.NoError(t, lim.RefundContext(ctx, "k", r))
	m.Refund("k", r, 11200*ms)
	check(0, 11200*ms)
	check(1, 10700*ms) // back in the stored window
	check(0, 10700*ms)
	check(0, 11600*ms)
}
