package limitertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Collide puts a node of the key other in lim's map under key's hash (see
// keyed.Collide), before key is held, and returns a function that reports
// whether that node's cell is still as it was.
type Collide func(lim Keyed, key, other string) (untouched func() bool)

// CollidingKeyDecidesOnItsOwnCell: a limiter whose lookup finds another
// key's node under a key's hash (a collision of their 64-bit hashes: see
// keyed.Found) decides on the key's own cell, never the other's, and reads
// the clock again after finding it: with a reading taken before the full
// lookup, a call that met the collision while a sweep evicted the key would
// count at a time before the sweep's, in the key's fresh cell, where the
// killed cell still held a request. With a limit of 1 per hour, k takes a
// request at 2h; a call reads the clock at 2h+1m, and the sweep at 3h+1m
// evicts k under it. The call may pass only at 3h or later, in its span, and
// then a request at 3h+2m must be denied; counted at 2h+1m, in the fresh
// cell, it lets that request pass: whatever time of its span the call is
// taken at, two requests of k passed within an hour.
// Both of a limiter's paths, Allow and Take, are driven down it.
func CollidingKeyDecidesOnItsOwnCell(t *testing.T, newLimiter Constructor, collide Collide) {
	const hour, minute = int64(time.Hour), int64(time.Minute)
	for _, path := range []struct {
		name string
		call func(lim Keyed, key string) bool
	}{
		{"Allow", func(lim Keyed, key string) bool { return lim.Allow(key) }},
		{"Take", func(lim Keyed, key string) bool { return lim.Take(key, 1).Allowed }},
	} {
		t.Run(path.name, func(t *testing.T) {
			clock := &HookClock{}
			lim, err := newLimiter(1, time.Hour, clock.Read)
			require.NoError(t, err)
			untouched := collide(lim, "k", "other")
			clock.Now.Store(2 * hour)
			require.True(t, path.call(lim, "k"), "k's first request, on its own cell")
			clock.Now.Store(2*hour + minute)
			require.False(t, path.call(lim, "k"), "k's second request in the hour")
			require.True(t, untouched(), "the other key's node is not k's cell")

			// At 2h+1m the call reads the clock; before it goes on, the
			// clock moves to 3h+1m and a sweep evicts k, idle since 3h.
			swept := 0
			clock.Hook = func() {
				clock.Now.Store(3*hour + minute)
				swept = lim.Sweep()
			}
			require.True(t, path.call(lim, "k"), "k evicted under the call: its fresh cell, at 3h+1m")
			require.Equal(t, 1, swept, "the sweep evicted k under the call")
			require.True(t, untouched())
			clock.Now.Store(3*hour + 2*minute)
			assert.False(t, path.call(lim, "k"),
				"the call counted at 3h+1m, after the sweep, not at the 2h+1m reading taken before the lookup found k, when k's hour was full")
		})
	}
}

// CollidingKeyTurnedAwayByTheCap: a key met by another key's node under its
// hash (see keyed.Found), whose full lookup then finds no room under the
// key cap, is turned away as any new key the cap has no room for, on both
// paths, Allow and Take, and, for a limiter with AllowRemaining, with no
// requests remaining there as in Take's report; the other key's node is
// left as it was. newLimiter must build a limiter with
// hotlimit.WithMaxKeys(1).
func CollidingKeyTurnedAwayByTheCap(t *testing.T, newLimiter Constructor, collide Collide) {
	const hour = int64(time.Hour)
	for _, path := range []struct {
		name string
		call func(lim Keyed, key string) bool
	}{
		{"Allow", func(lim Keyed, key string) bool { return lim.Allow(key) }},
		{"Take", func(lim Keyed, key string) bool { return lim.Take(key, 1).Allowed }},
	} {
		t.Run(path.name, func(t *testing.T) {
			clock := &HookClock{}
			clock.Now.Store(2 * hour)
			lim, err := newLimiter(1, time.Hour, clock.Read)
			require.NoError(t, err)
			require.True(t, path.call(lim, "held"), "the one key the cap has room for, busy for the hour")
			untouched := collide(lim, "k", "other")
			assert.False(t, path.call(lim, "k"), "no room for k")
			assert.True(t, untouched(), "the other key's node is not k's cell")
			assert.False(t, path.call(lim, "held"), "held's hour is full")
		})
	}
	t.Run("AllowRemaining", func(t *testing.T) {
		clock := &HookClock{}
		clock.Now.Store(2 * hour)
		l, err := newLimiter(1, time.Hour, clock.Read)
		require.NoError(t, err)
		lim, ok := l.(remainingAllower)
		if !ok {
			t.Skipf("%T has no AllowRemaining", l)
		}
		require.True(t, lim.Allow("held"), "the one key the cap has room for, busy for the hour")
		untouched := collide(lim, "k", "other")
		allowed, remaining := lim.AllowRemaining("k")
		assert.False(t, allowed, "no room for k")
		assert.Zero(t, remaining, "as Take(key, 1) reports")
		assert.Zero(t, lim.Take("k", 1).Remaining)
		assert.True(t, untouched(), "the other key's node is not k's cell")
	})
}
