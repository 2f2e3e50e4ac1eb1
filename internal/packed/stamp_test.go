package packed

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStampConstants(t *testing.T) {
	assert.Equal(t, int64(1<<61-2), int64(MaxStamp), "the latest time, as documented")
	assert.Equal(t, int64(-1<<61), int64(MinStamp), "the earliest time, as documented")
	ts, parity := UnpackStamp(StampDead)
	assert.Equal(t, uint64(1), parity)
	assert.Greater(t, ts, int64(MaxStamp), "the tombstone decodes above every live time")
	assert.Equal(t, int64(math.MinInt64|1), PackStamp(MinStamp, 1))
	assert.NotEqual(t, int64(StampDead), Refunded(PackStamp(MaxStamp, 1)))
	// Stamps order as their times, then the refunded bit, for each parity.
	assert.Less(t, PackStamp(-5, 1), PackStamp(-4, 0))
	assert.Less(t, PackStamp(7, 0), Refunded(PackStamp(7, 0)))
	assert.Less(t, Refunded(PackStamp(7, 1)), PackStamp(8, 0))
}

// FuzzStamp: every time in [MinStamp, MaxStamp], round and refunded bit
// round-trip, keep only the round's parity, and never pack to the tombstone.
func FuzzStamp(f *testing.F) {
	for _, s := range []int64{0, 1, -1, MinStamp, MaxStamp, MaxStamp - 1, MinStamp + 1} {
		f.Add(s, uint64(0), false)
		f.Add(s, uint64(7), true)
	}
	f.Fuzz(func(t *testing.T, ts int64, round uint64, refunded bool) {
		ts = min(max(ts, MinStamp), MaxStamp)
		s := PackStamp(ts, round)
		require.False(t, IsRefunded(s))
		if refunded {
			s = Refunded(s)
			require.True(t, IsRefunded(s))
		}
		got, parity := UnpackStamp(s)
		require.Equal(t, ts, got)
		require.Equal(t, round&1, parity)
		require.NotEqual(t, int64(StampDead), s)
	})
}
