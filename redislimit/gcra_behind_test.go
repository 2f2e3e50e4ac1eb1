package redislimit_test

import (
	"context"
	"strconv"
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

// TestGCRAClockFarBehindExact: a GCRA key whose clock steps back about 2^52
// ns (from near +2^51 to near −2^51, the range the limiter accepts) with a
// large limit holds, at the earlier reading, about −2^52 × limit tokens ×
// window, far beyond what a double holds exactly. The decisions there, a
// refund there, and the decisions back near the key's time must still be the
// exact model's, field by field: in particular the refund must not be lost
// to rounding. The policies and times are ones where doubles round it down.
func TestGCRAClockFarBehindExact(t *testing.T) {
	if strconv.IntSize != 64 {
		t.Skip("the policies' limits need a 64-bit int")
	}
	srv := redistest.Start(t)
	client := newClient(t, srv)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		limit  int64 // an int on a 64-bit platform
		window time.Duration
		t0, t1 int64 // the take, and the reading behind it of the refund
		checks []int64
	}{
		// Doubles round the refunded state down: the refund is lost.
		{"a", 30370598660467, 986322720488430, 1332127299413663, -1938928990563293, []int64{-1, 0, 1}},
		{"b", 1257810385873, 768272746226977, 1963706075026682, -1945585943224389, []int64{-1, 0, 1}},
		{"c", 17950329182626, 422924986917202, 2129388493675186, -2059659283821892, []int64{-1, 0, 1}},
		{"d", 18485472247758, 1041344417514799, 1946130267797151, -1940794161350811, []int64{-1, 0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: int(tc.limit), Window: tc.window, Burst: 1}
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
