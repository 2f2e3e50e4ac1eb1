package slidinglog

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestClampIsTheSaturatedDifferenceClamped checks clamp, which clamps a
// reading on the clock before subtracting the epoch, against its
// definition: the reading's saturated difference from the epoch, clamped
// to [minNow, packed.MaxStamp]. Epochs and readings are drawn from the
// whole int64 range, its edges, and around the points where the bounds
// saturate.
func TestClampIsTheSaturatedDifferenceClamped(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edges := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64,
		packed.MaxStamp, -packed.MaxStamp, packed.MinStamp, math.MaxInt64 - packed.MaxStamp, math.MinInt64 - packed.MinStamp}
	draw := func() int64 {
		switch rng.IntN(3) {
		case 0:
			return edges[rng.IntN(len(edges))] + rng.Int64N(5) - 2
		case 1:
			return int64(rng.Uint64())
		}
		return edges[rng.IntN(len(edges))] + int64(rng.Uint64()>>rng.IntN(64))
	}
	for _, window := range []time.Duration{MinWindow, time.Second, MaxWindow} {
		for range 20000 {
			epoch := draw()
			l, err := New(1, window, hotlimit.WithClock(func() int64 { return epoch }))
			require.NoError(t, err)
			require.Equal(t, epoch, l.epoch)
			for range 20 {
				c := draw()
				want := min(max(l.since(c), l.minNow), packed.MaxStamp)
				require.Equal(t, want, l.clamp(c), "epoch %d, reading %d, window %v", epoch, c, window)
			}
		}
	}
}
