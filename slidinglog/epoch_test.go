package slidinglog_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestUnixClockKeepsCounting: a limiter whose clock reads Unix nanoseconds,
// as hotlimitd's does, admits exactly Limit requests per Window, window
// after window, with exact finite waits, whatever year it is created in:
// its times count from its first clock reading, not from the clock's
// origin, so 2043 (2^61 ns after 1970) and the end of the int64 range are
// no edge. Receipts keep the clock's own times.
func TestUnixClockKeepsCounting(t *testing.T) {
	const year = int64(366 * 24 * time.Hour)
	starts := []int64{
		time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC).UnixNano(),
		time.Date(2043, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		packed.MaxStamp + int64(time.Second),
		time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano(),
		math.MaxInt64 - year,
		math.MinInt64 + year,
	}
	for _, start := range starts {
		for _, window := range []time.Duration{time.Millisecond, time.Second, time.Hour} {
			t.Run(fmt.Sprintf("start=%d/window=%v", start, window), func(t *testing.T) {
				const limit = 3
				clock := new(fakeClock)
				clock.Store(start)
				lim, err := slidinglog.New(limit, window, hotlimit.WithClock(clock.Load))
				require.NoError(t, err)
				w := int64(window)
				step := w / 8
				for win := range 200 {
					base := start + int64(win)*w
					for k := range limit {
						clock.Store(base + int64(k)*step)
						d, r := lim.TakeReceipt("k", 1)
						require.True(t, d.Allowed, "window %d request %d", win, k)
						remaining := 0 // the requests of the window before leave one by one
						if win == 0 {
							remaining = limit - 1 - k
						}
						require.Equal(t, remaining, d.Remaining, "window %d request %d", win, k)
						require.Equal(t, window, d.ResetAfter, "window %d request %d", win, k)
						require.Equal(t, hotlimit.Receipt{N: 1, At: base + int64(k)*step}, r, "window %d request %d", win, k)
					}
					clock.Store(base + w - 1)
					d := lim.Take("k", 1)
					require.False(t, d.Allowed, "window %d: the limit is spent", win)
					require.Equal(t, time.Duration(1), d.RetryAfter, "window %d: the oldest leaves 1 ns later", win)
					require.Equal(t, time.Duration(2*step+1), d.ResetAfter, "window %d", win)
				}
			})
		}
	}
}
