package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > burst or n < 0) must not judge the key's word at a clock reading taken
// before a write it sees, where the word's timestamp is ahead of the reading
// (as after a clock step back) and every wait is measured from the older
// reading. At 5 per second, a key that took 3 tokens at 0 is asked for its
// state at 200 ms; while the report reads the clock (200 ms), B takes a token
// at 500 ms, so that a report that loads the word after its clock reading
// sees B's write. The report answers as the model does either before B at
// 200 ms (3 left, full 400 ms later) or after B at 500 ms (3.5 left, full
// 300 ms later); judged at 200 ms after B's write, the key would be full only
// 600 ms later, 300 ms past the time it was.
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	const limit = 5
	at := func(d time.Duration) int64 { return int64(d) }
	for _, n := range []int{0, limit + 1, -1} {
		var c limitertest.HookClock
		lim, err := tokenbucket.New(limit, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		m := models.NewTokenBucket(limit, limit, time.Second, 0)
		require.True(t, lim.Take("k", 3).Allowed)
		require.True(t, m.Take("k", 3, 0).Allowed)

		c.Now.Store(at(200 * time.Millisecond))
		before := m.Take("k", n, at(200*time.Millisecond))
		var b bool
		c.Hook = func() {
			c.Now.Store(at(500 * time.Millisecond))
			b = lim.Allow("k")
		}
		d := lim.Take("k", n)
		require.Nil(t, c.Hook, "n = %d: the hook ran, inside the report", n)
		require.True(t, b, "n = %d: B at 500 ms", n)
		require.True(t, m.Take("k", 1, at(500*time.Millisecond)).Allowed)
		after := m.Take("k", n, at(500*time.Millisecond))
		require.NotEqual(t, before, after)
		assert.Contains(t, []hotlimit.Decision{before, after}, d,
			"n = %d: the key before B's take at 200 ms, or after it at 500 ms", n)
	}
}
