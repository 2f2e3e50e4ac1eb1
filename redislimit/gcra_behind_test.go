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

// TestGCRAClockFarBehindExact: a GCRA key whose clock steps back about 2^53
// ns (from near +2^52 to near −2^52, the range the limiter accepts) with a
// large limit holds, at the earlier reading, about −2^53 × limit tokens ×
// window, far beyond what a double holds exactly. The decisions there, a
// refund there, and the decisions back near the key's time must still be the
// exact model's, field by field: in particular the key must not admit before
// the model does (the refund's tokens rounded up) nor lose the refund (them
// rounded down). The policies and times are ones where doubles round each
// way.
func TestGCRAClockFarBehindExact(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limit  int
		window time.Duration
		t0, t1 int64 // the take, and the reading behind it of the refund
		checks []int64
	}{
		// Doubles round the refunded state up: admitted 1 ns early.
		{"up", 11539566959632, 996075537964534, 3787757255192940, -3431009967416481, []int64{-1, 0}},
		{"up2", 10761568420657, 825426392147250, 3238830871718418, -4460571592663945, []int64{-1, 0}},
		// Doubles round it down: the refund is lost.
		{"down", 30370598660467, 986322720488430, 2664258650908319, -3877857616604125, []int64{-1, 0, 1}},
		{"down2", 5953191887140, 916764297513116, 3384830689675256, -3207548603672622, []int64{-1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: tc.limit, Window: tc.window, Burst: 1}
			var clock atomic.Int64
			lim := newExact(t, client, c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
			m := models.NewGCRA(c.Limit, 1, c.Window, 0)
			key := tc.name
			at := func(now int64, n int) hotlimit.Decision {
				t.Helper()
				clock.Store(now)
				want := m.Take(key, n, now)
				got := take(t, lim, key, n)
				assert.Equal(t, want, got, "Take(%d) at %d", n, now)
				return got
			}
			clock.Store(tc.t0)
			d, r := lim.TakeReceipt(key, 1)
			require.True(t, d.Allowed)
			m.Take(key, 1, tc.t0)
			at(tc.t1, 1) // far behind: denied, far from passing
			clock.Store(tc.t1)
			require.NoError(t, lim.RefundContext(ctx, key, r))
			m.Refund(key, r, tc.t1)
			at(tc.t1, 0)
			for _, k := range tc.checks {
				at(tc.t0+k, 0)
			}
			at(tc.t0+tc.checks[0], 1)
		})
	}
}
