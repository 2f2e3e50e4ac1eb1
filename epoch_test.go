package hotlimit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// refundLimiter is an in-memory limiter of this module with refunds.
type refundLimiter interface {
	hotlimit.Refunder
	Len() int
	Sweep() int
}

// TestUnixClocksDecideAsAtTheOrigin: a limiter whose clock reads Unix
// nanoseconds (as hotlimitd's does) of today, of 2043 (2^61 ns after 1970),
// of 2100 or near the end of the int64 range decides, over many windows of
// random requests, reports, refunds, sweeps and small clock steps back,
// exactly as the same limiter whose clock starts at 0, read the same
// nanoseconds later: every Decision field by field (so it admits exactly
// Limit per Window, with the same finite waits, and Never only where the
// limiter at 0 says it), every Sweep and Len, and receipts shifted by the
// start. The limiters at 0 are the ones their packages' differential tests
// hold to the models. Each start is a whole number of windows, as fixed
// windows and sliding counters align their windows on the clock's origin;
// the other algorithms count from New's clock reading, whatever it is.
func TestUnixClocksDecideAsAtTheOrigin(t *testing.T) {
	algorithms := []struct {
		name string
		new  func(limit int, window time.Duration, opts ...hotlimit.Option) (refundLimiter, error)
	}{
		{"tokenbucket", func(l int, w time.Duration, o ...hotlimit.Option) (refundLimiter, error) {
			return tokenbucket.New(l, w, o...)
		}},
		{"fixedwindow", func(l int, w time.Duration, o ...hotlimit.Option) (refundLimiter, error) {
			return fixedwindow.New(l, w, o...)
		}},
		{"slidingcounter", func(l int, w time.Duration, o ...hotlimit.Option) (refundLimiter, error) {
			return slidingcounter.New(l, w, o...)
		}},
		{"slidinglog", func(l int, w time.Duration, o ...hotlimit.Option) (refundLimiter, error) {
			return slidinglog.New(l, w, o...)
		}},
		{"gcra", func(l int, w time.Duration, o ...hotlimit.Option) (refundLimiter, error) { return gcra.New(l, w, o...) }},
	}
	const year = int64(366 * 24 * time.Hour)
	starts := []struct {
		name string
		at   int64
	}{
		{"2026", time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC).UnixNano()},
		{"2043", time.Date(2043, 6, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{"2^61ns+1s", 1<<61 + int64(time.Second)},
		{"2100", time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{"MaxInt64-1y", math.MaxInt64 - year},
	}
	windows := []time.Duration{time.Millisecond, time.Second, time.Hour}
	for _, alg := range algorithms {
		for _, start := range starts {
			for wi, window := range windows {
				t.Run(fmt.Sprintf("%s/%s/%v", alg.name, start.name, window), func(t *testing.T) {
					const limit = 4
					w := int64(window)
					shift := start.at / w * w // whole windows
					var ref, got atomic.Int64 // the clocks: got = ref + shift
					got.Store(shift)
					refLim, err := alg.new(limit, window, hotlimit.WithClock(ref.Load))
					require.NoError(t, err)
					lim, err := alg.new(limit, window, hotlimit.WithClock(got.Load))
					require.NoError(t, err)
					rng := rand.New(rand.NewPCG(uint64(wi), uint64(start.at)))
					type held struct {
						key      string
						ref, got hotlimit.Receipt
					}
					var receipts []held
					keys := []string{"a", "b"}
					for step := range 4000 { // about 250 windows
						switch r := rng.IntN(100); {
						case r < 60:
							ref.Add(rng.Int64N(w/limit + 1))
						case r < 70:
							ref.Add(w) // exactly one window: the boundary
						case r < 75:
							ref.Add(-rng.Int64N(w / 2)) // a step back
						}
						got.Store(ref.Load() + shift)
						msg := fmt.Sprintf("step %d at %d ns", step, ref.Load())
						key := keys[rng.IntN(len(keys))]
						switch r := rng.IntN(20); {
						case r < 2:
							require.Equal(t, refLim.Sweep(), lim.Sweep(), "%s: Sweep", msg)
							require.Equal(t, refLim.Len(), lim.Len(), "%s: Len", msg)
						case r < 5 && len(receipts) > 0:
							i := rng.IntN(len(receipts))
							h := receipts[i]
							receipts = append(receipts[:i], receipts[i+1:]...)
							refLim.Refund(h.key, h.ref)
							lim.Refund(h.key, h.got)
						case r < 8:
							require.Equal(t, refLim.Allow(key), lim.Allow(key), "%s: Allow", msg)
						default:
							n := []int{1, 1, 1, 2, limit, 0, -1, limit + 1}[rng.IntN(8)]
							want, wr := refLim.TakeReceipt(key, n)
							d, r := lim.TakeReceipt(key, n)
							require.Equal(t, want, d, "%s: Take(%q, %d)", msg, key, n)
							if wr.N > 0 {
								wr.At += shift
							}
							require.Equal(t, wr, r, "%s: the receipt, shifted", msg)
							if r.N > 0 {
								receipts = append(receipts, held{key, wr, r})
								receipts[len(receipts)-1].ref.At -= shift
							}
						}
					}
				})
			}
		}
	}
}
