package slidinglog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > limit or n < 0) must not judge the key's log at a clock reading taken
// before a request it sees, logged at a later time: the log is then judged
// at that newest time, as after a clock step back, and ResetAfter runs to
// its expiry from the older reading. At 3 per second, a key that passed one
// request at 0.1 s (or none yet: a key not held) is asked for its state at
// 0.5 s; while the report reads the clock (0.5 s), B takes one at 0.8 s, so
// that a report that reads the log after its clock reading sees B's
// request. The report answers as the model does either before B at 0.5 s
// (2 left, reset 600 ms later; or full) or after B at 0.8 s (1 left, reset
// a second later; or 2 left); judged at 0.5 s after B's request, the key's
// reset would be 1.3 s away, 300 ms past the time it was. (A report of a key
// not held reads no clock, where B could land: B then comes after it.)
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	const limit = 3
	at := func(d time.Duration) int64 { return int64(d) }
	for _, held := range []bool{true, false} {
		for _, n := range []int{0, limit + 1, -1} {
			var c limitertest.HookClock
			lim, err := slidinglog.New(limit, time.Second, hotlimit.WithClock(c.Read))
			require.NoError(t, err)
			m := models.NewSlidingLog(limit, time.Second).Clamped(0)
			if held {
				c.Now.Store(at(100 * time.Millisecond))
				require.True(t, lim.Allow("k"))
				require.True(t, m.Take("k", 1, at(100*time.Millisecond)).Allowed)
			}

			c.Now.Store(at(500 * time.Millisecond))
			before := m.Take("k", n, at(500*time.Millisecond))
			var b bool
			c.Hook = func() {
				c.Now.Store(at(800 * time.Millisecond))
				b = lim.Allow("k")
			}
			d := lim.Take("k", n)
			if !held && c.Hook != nil {
				// A key not held reports as fresh, reading no clock: B
				// comes after the report.
				c.Read()
			}
			require.Nil(t, c.Hook, "held %v, n = %d: the hook ran", held, n)
			require.True(t, b, "held %v, n = %d: B at 0.8 s", held, n)
			require.True(t, m.Take("k", 1, at(800*time.Millisecond)).Allowed)
			after := m.Take("k", n, at(800*time.Millisecond))
			require.NotEqual(t, before, after)
			assert.Contains(t, []hotlimit.Decision{before, after}, d,
				"held %v, n = %d: the key before B's take at 0.5 s, or after it at 0.8 s", held, n)
		}
	}
}
