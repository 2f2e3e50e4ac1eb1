package tokenbucket_test

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/keyed"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestAutoSweepIsIncremental streams new keys, one request each, into a
// limiter of 100 per minute with auto-sweep at 1000 keys, as the clock moves
// 1 ms per key: a key is full again 600 ms after its request, so about 600
// keys are live at any time. No single Allow evicts more keys than one
// bounded walk visits (a sweep of the whole map in one call would evict
// hundreds at once), and the keys held stay below twice the live keys plus
// the threshold, whatever the number of keys streamed.
func TestAutoSweepIsIncremental(t *testing.T) {
	const threshold, live, keys = 1000, 600, 50_000
	var now atomic.Int64
	lim, err := tokenbucket.New(100, time.Minute, hotlimit.WithClock(now.Load), hotlimit.WithAutoSweep(threshold))
	require.NoError(t, err)
	most, evicted := 0, 0
	for i := range keys {
		before := lim.Len()
		require.True(t, lim.Allow("k"+strconv.Itoa(i)))
		if d := before + 1 - lim.Len(); d > 0 {
			evicted += d
			most = max(most, d)
		}
		require.LessOrEqual(t, lim.Len(), 2*live+threshold+keyed.SweepChunk, "key %d", i)
		now.Add(int64(time.Millisecond))
	}
	assert.Positive(t, evicted)
	assert.LessOrEqual(t, most, keyed.SweepChunk, "evictions of one Allow")
}
