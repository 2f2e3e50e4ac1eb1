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

// TestDifferentialWithRefunds plays random sequences of takes with
// receipts, refunds of them (each at most once, some after their window),
// reports (Take(key, 0), n < 0, n > limit), sweeps and clock moves against
// the sequential model: every Decision, receipt (At the clock reading of the
// first request's logged time, saturated), Sweep count and Len must agree, and
// RetryAfter(key, n), asked before each Take, must be its RetryAfter (0
// when it passes), changing nothing. The
// policies run from the shortest window to the longest and up to the
// largest limit, and the clock starts anywhere, at the ends of the range a
// slot holds (±2^61 ns around the limiter's epoch, its clock reading at New,
// which is 0, a Unix time of today or of 2043, or at or near either end of
// the int64 range) and beyond them (where readings are clamped), and sometimes
// jumps far ahead. Where the clock steps back, a refund read at a
// later clock can leave the free entries out of claim order; Remaining is
// then compared only when the model counts every free entry (see
// models.SlidingLog.RemainingExact), and everything else still must agree.
func TestDifferentialWithRefunds(t *testing.T) {
	type policy struct {
		limit  int
		window time.Duration
	}
	policies := []policy{
		{1, slidinglog.MinWindow}, {2, 7 * time.Millisecond}, {3, time.Second},
		{7, time.Second}, {64, time.Minute}, {5, slidinglog.MaxWindow},
		{300, slidinglog.MaxWindow}, {slidinglog.MaxLimit, time.Second},
	}
	type held struct {
		key string
		r   hotlimit.Receipt
	}
	for _, back := range []bool{false, true} {
		for pi, p := range policies {
			steps := 3000
			if testing.Short() {
				steps = 600
			}
			t.Run(fmt.Sprintf("back=%v/limit=%d/window=%v", back, p.limit, p.window), func(t *testing.T) {
				for seed := range uint64(4) {
					rng := rand.New(rand.NewPCG(seed, uint64(pi)))
					epoch := epochs[(int(seed)+pi)%len(epochs)]
					clock := new(fakeClock)
					clock.Store(epoch)
					lim, err := slidinglog.New(p.limit, p.window, hotlimit.WithClock(clock.Load))
					require.NoError(t, err)
					m := models.NewSlidingLog(p.limit, p.window).Clamped(epoch)
					w := int64(p.window)
					switch seed {
					case 0:
						clock.Store(addSat(epoch, rng.Int64N(1<<50)-1<<49))
					case 1: // near the top of a slot's range, and past it
						clock.Store(addSat(epoch, packed.MaxStamp-4*w-rng.Int64N(4*w)))
					case 2: // near the bottom, and below it
						clock.Store(addSat(epoch, packed.MinStamp+rng.Int64N(3*w)-w))
					default:
						clock.Store(math.MinInt64 + rng.Int64N(w))
					}
					keys := []string{"a", "b"}
					var receipts []held
					for step := range steps {
						switch r := rng.IntN(100); {
						case r < 30:
						case r < 60:
							clock.Add(rng.Int64N(w/int64(p.limit) + 1))
						case r < 72:
							clock.Add(rng.Int64N(2 * w))
						case r < 75:
							clock.Add(w) // exactly one window: the boundary
						case r < 77: // far ahead, saturating at the top
							if now := clock.Load(); now < math.MaxInt64-1<<61 {
								clock.Add(rng.Int64N(1 << 61))
							}
						case r < 82 && back:
							clock.Add(-rng.Int64N(2 * w))
						case r < 84:
							require.Equal(t, m.Sweep(clock.Load()), lim.Sweep(), "seed %d step %d: Sweep", seed, step)
							require.Equal(t, m.Len(), lim.Len(), "seed %d step %d: Len", seed, step)
							continue
						}
						now := clock.Load()
						msg := fmt.Sprintf("seed %d step %d now %d", seed, step, now)
						if rng.IntN(4) == 0 && len(receipts) > 0 {
							i := rng.IntN(len(receipts))
							h := receipts[i]
							receipts = append(receipts[:i], receipts[i+1:]...)
							m.Refund(h.key, h.r, now)
							lim.Refund(h.key, h.r)
							continue
						}
						key := keys[rng.IntN(len(keys))]
						var n int
						switch r := rng.IntN(10); {
						case r < 5:
							n = 1
						case r < 6:
							n = 0
						case r < 7:
							n = []int{-1, p.limit + 1, p.limit}[rng.IntN(3)]
						default:
							n = 1 + rng.IntN(min(p.limit, 8))
						}
						want, wantR := m.TakeReceipt(key, n, now)
						wait := lim.RetryAfter(key, n)
						switch {
						case want.Allowed && n >= 0:
							require.Zero(t, wait, "%s: RetryAfter(%q, %d) of a Take that passes", msg, key, n)
						case back:
							// Out of claim order, Take's wait, on the oldest and
							// the n-th entry, can be short: it is then denied
							// again, on an entry between.
							require.GreaterOrEqual(t, wait, want.RetryAfter, "%s: RetryAfter(%q, %d)", msg, key, n)
						default:
							require.Equal(t, want.RetryAfter, wait, "%s: RetryAfter(%q, %d)", msg, key, n)
						}
						got, rc := lim.TakeReceipt(key, n)
						require.Equal(t, wantR, rc, "%s: receipt of Take(%q, %d)", msg, key, n)
						if !m.RemainingExact() {
							require.True(t, back, "%s: Remaining is exact with a clock that never steps back", msg)
							want.Remaining = got.Remaining
						}
						require.Equal(t, want, got, "%s: Take(%q, %d)", msg, key, n)
						if rc.N > 0 {
							receipts = append(receipts, held{key, rc})
						}
					}
				}
			})
		}
	}
}

// epochs are clock readings a limiter is created at: the clock's origin, a
// Unix time of today, one past 2^61 ns (2043), and near and at both ends
// of the int64 range.
var epochs = []int64{
	0,
	time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC).UnixNano(),
	packed.MaxStamp + int64(time.Second),
	math.MaxInt64 - int64(366*24*time.Hour),
	math.MinInt64 + int64(time.Hour),
	math.MinInt64, math.MaxInt64,
}

// addSat returns a + b, saturated to the int64 range.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}
