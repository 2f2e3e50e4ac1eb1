package tokenbucket

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestSweepCountsAKeyInsertedButNotYetListed: a Sweep that evicts a key
// still being inserted (in the map, not yet on the sweep list, see
// TestSweepJudgesAKeyInsertedButNotYetListed) counts it among the keys it
// returns, as it counts the listed ones, and Len agrees with it.
func TestSweepCountsAKeyInsertedButNotYetListed(t *testing.T) {
	var clock limitertest.HookClock
	lim, err := New(1, time.Second, hotlimit.WithClock(clock.Read), hotlimit.WithAutoSweep(1))
	require.NoError(t, err)
	rng := int64(lim.b.Range())
	clock.Now.Store(int64(time.Second))
	// As in TestSweepJudgesAKeyInsertedButNotYetListed: the insertion of
	// "new" after these eleven pays an auto-sweep step, whose clock reading
	// comes after the key is in the map and before it is listed.
	for i := range 11 {
		require.True(t, lim.Allow("k"+strconv.Itoa(i)))
	}
	stalled, evicted, left := false, 0, -1
	clock.Hook = func() {
		clock.Hook = nil
		_, held := lim.cells.Peek("new")
		stalled = held
		clock.Now.Add(rng + rng/2) // every key is full again
		evicted = lim.Sweep()
		left = lim.Len()
	}
	lim.Allow("new") // stalls in its auto-sweep step's reading
	require.True(t, stalled, "the insertion's reading came after the key was in the map")
	assert.Equal(t, 12, evicted, "the eleven listed keys and the one not yet listed")
	assert.Equal(t, 0, left)
}
