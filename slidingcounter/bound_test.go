package slidingcounter_test

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// slidingLog is the exact model the counter approximates: the times of all
// admitted requests, in order (one entry per request).
type slidingLog []int64

// in returns how many entries lie in (from, to].
func (s slidingLog) in(from, to int64) int64 {
	lo := sort.Search(len(s), func(i int) bool { return s[i] > from })
	hi := sort.Search(len(s), func(i int) bool { return s[i] > to })
	return int64(hi - lo)
}

// traffic yields the arrival times of one pattern, nondecreasing.
type traffic func(rng *rand.Rand, limit, window int64) []int64

var patterns = map[string]traffic{
	// Uniform random arrivals at k times the limit's rate.
	"uniform": func(rng *rand.Rand, limit, window int64) []int64 {
		k := int64(1 + rng.IntN(4))
		return arrivals(rng, 40*k*limit, func() int64 { return rng.Int64N(2*window/(k*limit) + 1) })
	},
	// Bursts of up to 2·limit requests at one instant, spread at random.
	"bursts": func(rng *rand.Rand, limit, window int64) []int64 {
		var out []int64
		now := int64(0)
		for range 60 {
			now += rng.Int64N(window)
			for range 1 + rng.Int64N(2*limit) {
				out = append(out, now)
			}
		}
		return out
	},
	// The adversary: bursts in the last nanoseconds of each window, then
	// steady requests through the next.
	"window-ends": func(rng *rand.Rand, limit, window int64) []int64 {
		var out []int64
		for i := range int64(30) {
			end := (2*i+1)*window - 1 - rng.Int64N(3)
			for range limit {
				out = append(out, end)
			}
			for t := end + 1; t < end+window; t += 1 + rng.Int64N(window/(2*limit)+1) {
				out = append(out, t)
			}
		}
		return out
	},
}

// arrivals returns n nondecreasing times separated by gap().
func arrivals(_ *rand.Rand, n int64, gap func() int64) []int64 {
	out := make([]int64, n)
	now := int64(0)
	for i := range out {
		now += gap()
		out[i] = now
	}
	return out
}

// TestErrorBound plays random traffic through the limiter and replays its
// admissions into an exact sliding log. At every admission t (the spans
// ending there hold the most), with e the offset of t into its window i, P
// the admissions of window i−1 and P_t those after t − Window, the span
// (t − Window, t] must hold at most Limit + P_t − ⌊P·(Window − e)/Window⌋
// (the documented bound, computed with math/big), hence at most 2·Limit; each
// aligned window at most Limit. The largest excess over Limit is logged per
// pattern; under the adversarial one the excess must reach Limit − 1 or more
// and the bound must hold with equality somewhere (it is not loose).
func TestErrorBound(t *testing.T) {
	const window = int64(time.Second)
	rng := rand.New(rand.NewPCG(13, 14))
	for _, limit := range []int64{1, 3, 10, 100} {
		for _, name := range []string{"uniform", "bursts", "window-ends"} {
			t.Run(fmt.Sprintf("limit=%d/traffic=%s", limit, name), func(t *testing.T) {
				var now atomic.Int64
				lim, err := slidingcounter.New(int(limit), time.Duration(window), hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				var log slidingLog
				var traffic []int64
				for run := range int64(4) { // four runs, a hundred windows apart
					for _, at := range patterns[name](rng, limit, window) {
						traffic = append(traffic, at+run*100*window)
					}
				}
				for _, at := range traffic {
					now.Store(at)
					n := 1
					if rng.IntN(4) == 0 {
						n = 1 + rng.IntN(int(limit))
					}
					if lim.Take("k", n).Allowed {
						for range n {
							log = append(log, at)
						}
					}
				}
				require.Greater(t, int64(len(log)), 10*limit, "traffic was admitted")
				maxExcess, minSlack := int64(0), 2*limit
				for _, at := range log {
					i := models.FloorDiv(at, window)
					e := at - i*window
					count := log.in(at-window, at)
					p := log.in((i-1)*window-1, i*window-1)
					pt := log.in(at-window, i*window-1)
					est := new(big.Int).Mul(big.NewInt(p), big.NewInt(window-e))
					est.Quo(est, big.NewInt(window))
					bound := limit + pt - est.Int64()
					if !assert.LessOrEqual(t, count, bound, "span ending at %d", at) ||
						!assert.LessOrEqual(t, count, 2*limit, "span ending at %d", at) ||
						!assert.LessOrEqual(t, log.in(i*window-1, (i+1)*window-1), limit, "window %d", i) {
						return
					}
					maxExcess = max(maxExcess, count-limit)
					minSlack = min(minSlack, bound-count)
				}
				t.Logf("admitted %d; max excess over limit %d in any Window: %d", len(log), limit, maxExcess)
				if name == "window-ends" {
					assert.GreaterOrEqual(t, maxExcess, limit-1, "the adversary nearly doubles the limit")
					assert.Zero(t, minSlack, "the bound is reached")
				}
			})
		}
	}
}
