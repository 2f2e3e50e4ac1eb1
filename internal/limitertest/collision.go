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
// lookup, a call that met the collision while a sweep evicted the key and
// another call inserted it again would count at a time before the sweep's,
// in the fresh cell, and a limit of 1 per hour would admit again too soon.
// Both of a limiter's paths, Allow and Take, are driven down it.
func CollidingKeyDecidesOnItsOwnCell(t *testing.T, newLimiter Constructor, collide Collide) {
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
			lim, err := newLimiter(1, time.Hour, clock.Read)
			require.NoError(t, err)
			untouched := collide(lim, "k", "other")
			require.True(t, path.call(lim, "k"), "k's first request, on its own cell")
			require.False(t, path.call(lim, "k"), "k's second request in the hour")
			require.True(t, untouched(), "the other key's node is not k's cell")

			// At 2h the call reads the clock; before it goes on, the clock
			// moves to 4h and a sweep evicts k, idle since 1h.
			clock.Now.Store(2 * hour)
			swept := 0
			clock.Hook = func() {
				clock.Now.Store(4 * hour)
				swept = lim.Sweep()
			}
			require.True(t, path.call(lim, "k"), "k evicted and inserted again: a fresh cell")
			require.Equal(t, 1, swept, "the sweep evicted k under the call")
			require.True(t, untouched())
			clock.Now.Store(4*hour + int64(time.Minute))
			assert.False(t, path.call(lim, "k"),
				"the request counted at 4h, after the sweep, not at the 2h reading taken before the lookup found k")
		})
	}
}
