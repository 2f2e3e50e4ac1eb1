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

// replayOp is one call of a recorded history: at clock reading at, a
// TakeReceipt(key, n), a Refund of the receipt of the take op ref, or a
// Sweep.
type replayOp struct {
	kind byte // 't' take, 'r' refund, 's' sweep
	at   int64
	key  string
	n    int
	ref  int
}

// replay builds a limiter of limit per window at epoch and plays ops on it,
// returning it and its clock, left at the last op's reading.
func replay(t *testing.T, limit int, window time.Duration, epoch int64, ops []replayOp) (*slidinglog.Limiter, *fakeClock) {
	t.Helper()
	clock := new(fakeClock)
	clock.Store(epoch)
	lim, err := slidinglog.New(limit, window, hotlimit.WithClock(clock.Load))
	require.NoError(t, err)
	receipts := make(map[int]hotlimit.Receipt)
	for i, op := range ops {
		clock.Store(op.at)
		switch op.kind {
		case 't':
			_, r := lim.TakeReceipt(op.key, op.n)
			receipts[i] = r
		case 'r':
			lim.Refund(op.key, receipts[op.ref])
		case 's':
			lim.Sweep()
		}
	}
	return lim, clock
}

// TestRetryAfterIsTheWaitOfTheTake plays random histories of takes of one
// or several requests, refunds (some read at a later clock than the calls
// that follow, the clock then stepping back, which leaves the free entries
// out of claim order), sweeps and clock moves, against the sequential
// model, and before every Take asks RetryAfter(key, n): it must insert no
// key, agree with the model where the model's wait is exact, be 0 only if
// the Take passes, and, at every denial (not Never), the same history
// replayed on a fresh limiter, under a frozen clock, must deny Take(key, n)
// 1 ns before it and admit it at it.
func TestRetryAfterIsTheWaitOfTheTake(t *testing.T) {
	type policy struct {
		limit  int
		window time.Duration
	}
	policies := []policy{{1, time.Second}, {2, time.Second}, {3, 10 * time.Millisecond}, {5, time.Second}, {8, time.Minute}}
	seeds := uint64(24)
	if testing.Short() {
		seeds = 8
	}
	// Denials where the model's Take waits less than RetryAfter: free
	// entries out of claim order, an entry between the oldest and the n-th
	// still counted.
	outOfOrder := 0
	for _, back := range []bool{false, true} {
		for pi, p := range policies {
			stream := uint64(pi) << 1
			if back {
				stream |= 1
			}
			t.Run(fmt.Sprintf("back=%v/limit=%d/window=%v", back, p.limit, p.window), func(t *testing.T) {
				checked := 0 // denials whose wait the replays checked
				for seed := range seeds {
					rng := rand.New(rand.NewPCG(seed, stream))
					epoch := epochs[int(seed)%len(epochs)]
					clock := new(fakeClock)
					clock.Store(epoch)
					lim, err := slidinglog.New(p.limit, p.window, hotlimit.WithClock(clock.Load))
					require.NoError(t, err)
					m := models.NewSlidingLog(p.limit, p.window).Clamped(epoch)
					w := int64(p.window)
					switch seed % 4 { // as in TestDifferentialWithRefunds
					case 0:
						clock.Store(addSat(epoch, rng.Int64N(1<<50)-1<<49))
					case 1: // near the top of a slot's range, and past it
						clock.Store(addSat(epoch, packed.MaxStamp-4*w-rng.Int64N(4*w)))
					case 2: // near the bottom, and below it
						clock.Store(addSat(epoch, packed.MinStamp+rng.Int64N(3*w)-w))
					default:
						clock.Store(math.MinInt64 + rng.Int64N(w))
					}
					var ops []replayOp
					var takes []int // ops whose receipt is not refunded yet
					receipts := make(map[int]hotlimit.Receipt)
					keys := []string{"a", "b"}
					for step := range 120 {
						switch r := rng.IntN(100); {
						case r < 30:
						case r < 60:
							clock.Store(addSat(clock.Load(), rng.Int64N(w/int64(p.limit)+1)))
						case r < 70:
							clock.Store(addSat(clock.Load(), rng.Int64N(2*w)))
						case r < 80 && back:
							clock.Store(addSat(clock.Load(), -rng.Int64N(2*w)))
						case r < 83:
							now := clock.Load()
							require.Equal(t, m.Sweep(now), lim.Sweep(), "seed %d step %d: Sweep", seed, step)
							ops = append(ops, replayOp{kind: 's', at: now})
							continue
						}
						now := clock.Load()
						if rng.IntN(4) == 0 && len(takes) > 0 {
							i := rng.IntN(len(takes))
							ref := takes[i]
							takes = append(takes[:i], takes[i+1:]...)
							op := ops[ref]
							var ahead int64
							if back && rng.IntN(2) == 0 {
								// A refund at a later reading, the clock
								// then stepping back: it can mark a newer
								// entry where an older one is expired at
								// its reading but not after the step.
								ahead = rng.Int64N(2 * w)
							}
							m.Refund(op.key, receipts[ref], addSat(now, ahead))
							clock.Store(addSat(now, ahead))
							lim.Refund(op.key, receipts[ref])
							clock.Store(now)
							ops = append(ops, replayOp{kind: 'r', at: addSat(now, ahead), key: op.key, ref: ref})
							continue
						}
						key := keys[rng.IntN(len(keys))]
						n := 1 + rng.IntN(p.limit)
						msg := fmt.Sprintf("seed %d step %d now %d: RetryAfter(%q, %d)", seed, step, now, key, n)
						held := lim.Len()
						wait := lim.RetryAfter(key, n)
						require.Equal(t, held, lim.Len(), "%s inserted a key", msg)
						if wait > 0 && wait != hotlimit.Never {
							early, eclock := replay(t, p.limit, p.window, epoch, ops)
							eclock.Store(now + int64(wait) - 1)
							require.False(t, early.Take(key, n).Allowed, "%s = %v: Take 1 ns before", msg, wait)
							at, aclock := replay(t, p.limit, p.window, epoch, ops)
							aclock.Store(now + int64(wait))
							require.True(t, at.Take(key, n).Allowed, "%s = %v: Take at it", msg, wait)
							checked++
							if want := m.Clone().Take(key, n, now); want.RetryAfter < wait {
								outOfOrder++ // Take's own wait, on two entries, is short
							}
						}
						want := m.Take(key, n, now)
						if !back {
							require.Equal(t, want.RetryAfter, wait, "%s: the model's", msg)
						}
						ops = append(ops, replayOp{kind: 't', at: now, key: key, n: n})
						got, r := lim.TakeReceipt(key, n)
						receipts[len(ops)-1] = r
						require.Equal(t, want.Allowed, got.Allowed, "%s: Take", msg)
						if wait == 0 {
							require.True(t, got.Allowed, "%s = 0: Take now", msg)
						}
						if got.Allowed {
							takes = append(takes, len(ops)-1)
						}
					}
				}
				require.Positive(t, checked, "no denial to check")
			})
		}
	}
	if !testing.Short() {
		require.Positive(t, outOfOrder, "no history left the free entries out of claim order")
	}
}
