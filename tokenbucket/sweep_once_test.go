package tokenbucket

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestSweepReadsEachKeyOnceWhenNoInsertionIsInFlight: with no insertion or
// revival between publishing its cell and listing it, every key held is
// listed, and a sweep judges each once, in its walk of the list; a pass over
// the map on top, in hash order, would cost a sweep of a million keys many
// times its walk.
func TestSweepReadsEachKeyOnceWhenNoInsertionIsInFlight(t *testing.T) {
	now := int64(time.Second)
	lim, err := New(10, time.Second, hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	const keys = 1000
	for i := range keys {
		require.True(t, lim.Allow("k"+strconv.Itoa(i)))
	}
	loads := 0
	lim.sweepLoaded = func() { loads++ }
	assert.Zero(t, lim.Sweep(), "every key holds nine tokens of ten")
	assert.Equal(t, keys, loads, "each key's word is read once")
}
