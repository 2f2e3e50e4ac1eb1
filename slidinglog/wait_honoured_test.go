package slidinglog_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/internal/packed"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// extremeEpochs are clock readings at New at and next to the ends of the
// int64 range, and either side of the clock's origin.
var extremeEpochs = []int64{
	math.MinInt64, math.MinInt64 + 1, math.MaxInt64, math.MaxInt64 - 1,
	-1, 0, 1, math.MinInt64 + packed.MaxStamp, math.MaxInt64 - packed.MaxStamp,
	math.MaxInt64 + packed.MinStamp, math.MinInt64 - packed.MinStamp,
}

// randomReading returns a clock reading for a test of a limiter with the
// given epoch and window: near the epoch, near the ends of the range a slot
// holds around it, or at or near the ends of the int64 range.
func randomReading(rng *rand.Rand, epoch, w int64) int64 {
	switch rng.IntN(8) {
	case 0:
		return math.MinInt64 + rng.Int64N(2*w)
	case 1:
		return math.MaxInt64 - rng.Int64N(2*w)
	case 2:
		return addSat(epoch, packed.MaxStamp-rng.Int64N(4*w)+w)
	case 3:
		return addSat(epoch, packed.MinStamp+rng.Int64N(4*w))
	case 4:
		return rng.Int64()
	default:
		return addSat(epoch, rng.Int64N(4*w)-2*w)
	}
}

// TestFiniteRetryAfterIsHonoured: a single caller denied with a finite
// RetryAfter r, who advances the clock by exactly r and asks again for the
// same n, passes; whatever the epoch (up to the ends of the int64 range),
// wherever the clock jumps (back across the epoch, to either end of the
// int64 range and back), and with refunds of its own receipts in between.
// A ResetAfter that is finite is honoured too: advanced by it, the key has
// its whole limit. Neither ends past math.MaxInt64, where no clock gets.
// Every decision also agrees with the model.
func TestFiniteRetryAfterIsHonoured(t *testing.T) {
	retried := 0 // denials honoured: the test must make some
	windows := []time.Duration{slidinglog.MinWindow, 3 * time.Millisecond, time.Second, time.Hour, slidinglog.MaxWindow}
	for ei, epoch := range extremeEpochs {
		for wi, window := range windows {
			t.Run(fmt.Sprintf("epoch=%d/window=%v", epoch, window), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(ei), uint64(wi)))
				for round := range 20 {
					limit := 1 + rng.IntN(4)
					clock := new(fakeClock)
					clock.Store(epoch)
					lim, err := slidinglog.New(limit, window, hotlimit.WithClock(clock.Load))
					require.NoError(t, err)
					m := models.NewSlidingLog(limit, window).Clamped(epoch)
					w := int64(window)
					clock.Store(randomReading(rng, epoch, w))
					var receipts []hotlimit.Receipt
					refunded := false
					for step := range 200 {
						switch r := rng.IntN(10); {
						case r < 1:
							clock.Store(randomReading(rng, epoch, w))
						case r < 2:
							clock.Store(addSat(clock.Load(), -rng.Int64N(2*w)))
						case r < 6:
							clock.Store(addSat(clock.Load(), rng.Int64N(w/int64(limit)+1)))
						}
						if rng.IntN(5) == 0 && len(receipts) > 0 {
							i := rng.IntN(len(receipts))
							m.Refund("k", receipts[i], clock.Load())
							lim.Refund("k", receipts[i])
							refunded = true
							receipts = append(receipts[:i], receipts[i+1:]...)
							continue
						}
						n := 1 + rng.IntN(limit)
						now := clock.Load()
						msg := fmt.Sprintf("round %d step %d limit %d n %d now %d", round, step, limit, n, now)
						want := m.Take("k", n, now)
						d, rc := lim.TakeReceipt("k", n)
						if !m.RemainingExact() {
							want.Remaining = d.Remaining
						}
						require.Equal(t, want, d, msg)
						if rc.N > 0 {
							receipts = append(receipts, rc)
						}
						if d.ResetAfter > 0 && d.ResetAfter != hotlimit.Never && rng.IntN(4) == 0 {
							at := now + int64(d.ResetAfter)
							require.Greater(t, at, now, "%s: ResetAfter %v ends past the latest clock reading", msg, d.ResetAfter)
							clock.Store(at)
							r := lim.Take("k", 0)
							m.Take("k", 0, at)
							require.Equal(t, limit, r.Remaining, "%s: after ResetAfter %v", msg, d.ResetAfter)
							continue
						}
						if d.Allowed || d.RetryAfter == hotlimit.Never {
							continue
						}
						require.Positive(t, d.RetryAfter, msg)
						at := now + int64(d.RetryAfter)
						require.GreaterOrEqual(t, at, now, "%s: RetryAfter %v ends past the latest clock reading", msg, d.RetryAfter)
						clock.Store(at)
						want = m.Take("k", n, at)
						d2, rc := lim.TakeReceipt("k", n)
						if !m.RemainingExact() {
							want.Remaining = d2.Remaining
						}
						require.Equal(t, want, d2, "%s: retry", msg)
						if !d2.Allowed && d.RetryAfter == time.Nanosecond && refunded {
							// Room taken part way by a refund's marks out of
							// claim order: see Take.
							continue
						}
						require.True(t, d2.Allowed, "%s: denied again %v after RetryAfter %v", msg, d2, d.RetryAfter)
						retried++
						receipts = append(receipts, rc)
					}
				}
			})
		}
	}
	require.Positive(t, retried, "no finite RetryAfter was honoured")
}
