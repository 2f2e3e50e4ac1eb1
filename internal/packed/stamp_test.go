package packed

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStampConstants(t *testing.T) {
	ts, parity := UnpackStamp(StampDead)
	assert.Equal(t, uint64(1), parity)
	assert.Greater(t, ts, int64(MaxStamp), "the tombstone decodes above every live time")
	assert.Equal(t, int64(math.MinInt64|1), PackStamp(MinStamp, 1))
	assert.NotEqual(t, int64(StampDead), PackStamp(MaxStamp, 1))
	// Stamps order as their times, for each parity.
	assert.Less(t, PackStamp(-5, 1), PackStamp(-4, 0))
}

// FuzzStamp: every time in [MinStamp, MaxStamp] and round round-trips, keeps
// only the round's parity, and never packs to the tombstone.
func FuzzStamp(f *testing.F) {
	for _, s := range []int64{0, 1, -1, MinStamp, MaxStamp, MaxStamp - 1, MinStamp + 1} {
		f.Add(s, uint64(0))
		f.Add(s, uint64(7))
	}
	f.Fuzz(func(t *testing.T, ts int64, round uint64) {
		ts = min(max(ts, MinStamp), MaxStamp)
		s := PackStamp(ts, round)
		got, parity := UnpackStamp(s)
		require.Equal(t, ts, got)
		require.Equal(t, round&1, parity)
		require.NotEqual(t, int64(StampDead), s)
	})
}
