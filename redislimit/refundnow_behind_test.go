package redislimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// TestRefundNowIsRefundOfTakeNow: RefundNowContext(key, n) at an instant
// gives back what RefundContext gives back for the receipt of a take of n
// made at that instant, for every algorithm, on a clock that reads as
// the key's last take did, ahead of it, and behind it (Redis's TIME stepped
// back, across a window's start): a fixed window or sliding counter counts
// such a take in the key's later window, and a sliding log logs it at its
// newest time, so the requests taken now are given back there. Two keys
// live the same history; one is refunded by receipt, the other by
// RefundNowContext, and every report and take after must be the same.
func TestRefundNowIsRefundOfTakeNow(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	const minute = int64(time.Minute)
	for _, a := range algorithms {
		for _, step := range []struct {
			name string
			by   int64 // the clock's step after the first take
		}{
			{"same", 0},
			{"ahead", 5 * int64(time.Second)},
			{"behind", -5 * int64(time.Second)}, // into the window before
		} {
			name := fmt.Sprintf("%v/%s", a, step.name)
			t.Run(name, func(t *testing.T) {
				var clock atomic.Int64
				clock.Store(61*minute + 2*int64(time.Second))
				c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
				lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix(name+":"),
					redislimit.WithFailPolicy(redislimit.FailClosed))
				for _, k := range []string{"receipt", "now"} {
					require.True(t, take(t, lim, k, 2).Allowed)
				}
				clock.Add(step.by)
				d, r := lim.TakeReceipt("receipt", 1)
				require.True(t, d.Allowed)
				require.True(t, take(t, lim, "now", 1).Allowed)
				require.NoError(t, lim.RefundContext(ctx, "receipt", r))
				require.NoError(t, lim.RefundNowContext(ctx, "now", 1))
				assert.Equal(t, take(t, lim, "receipt", 0), take(t, lim, "now", 0), "the report after the give-back")
				for i := range 3 {
					assert.Equal(t, take(t, lim, "receipt", 1), take(t, lim, "now", 1), "take %d after the give-back", i)
				}
			})
		}
	}
}

// TestRefundNowBehindKeysMaking: requests given back as taken now, by a
// clock that stepped back behind the key's making (Redis's TIME stepped
// back just after the key's first take), are given back: a take made then
// would count in the key (its take moves the key's making back to it), so
// requests taken now are the key's, as RefundContext of such a take's
// receipt gives them back. The key, spent, passes one more request once
// the clock is back past its making.
func TestRefundNowBehindKeysMaking(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			var clock atomic.Int64
			made := int64(time.Hour) + int64(time.Second)
			clock.Store(made)
			c := hotlimit.Config{Algorithm: a, Limit: 4, Window: time.Minute}
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithPrefix("behind:"+a.String()+":"),
				redislimit.WithFailPolicy(redislimit.FailClosed))
			require.True(t, take(t, lim, "k", lim.Burst()).Allowed, "the burst, as the key is made")
			clock.Store(made - 1)
			require.NoError(t, lim.RefundNowContext(context.Background(), "k", 1))
			clock.Store(made + 1)
			assert.True(t, take(t, lim, "k", 1).Allowed, "the request given back")
		})
	}
}
