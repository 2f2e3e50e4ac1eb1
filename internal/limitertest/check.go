package limitertest

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// Problem returns what is wrong with d, the Decision of Take(key, n), or ""
// when nothing is. Every Decision of every limiter must have:
//
//   - no negative RetryAfter, ResetAfter or Remaining;
//   - RetryAfter 0 when allowed;
//   - RetryAfter above 0 when denied: a request that waiting lets pass
//     (n up to the burst) says how long, one that never passes says
//     hotlimit.Never, and neither is 0.
func Problem(d hotlimit.Decision, n int) string {
	switch {
	case d.RetryAfter < 0:
		return fmt.Sprintf("negative RetryAfter %v", d.RetryAfter)
	case d.ResetAfter < 0:
		return fmt.Sprintf("negative ResetAfter %v", d.ResetAfter)
	case d.Remaining < 0:
		return fmt.Sprintf("negative Remaining %d", d.Remaining)
	case d.Allowed && d.RetryAfter != 0:
		return fmt.Sprintf("allowed with RetryAfter %v", d.RetryAfter)
	case !d.Allowed && n != 0 && d.RetryAfter == 0:
		return "denied with RetryAfter 0"
	}
	return ""
}

// checker reports the Decisions of a hammer that break Problem's rules,
// from any goroutine, the first few in full and the rest as a count.
type checker struct {
	t   testing.TB
	bad atomic.Int64
}

func newChecker(t testing.TB) *checker { return &checker{t: t} }

// check reports d, the Decision of Take(key, n), if it breaks a rule.
func (c *checker) check(d hotlimit.Decision, key string, n int, at int64) {
	p := Problem(d, n)
	if p == "" {
		return
	}
	if c.bad.Add(1) <= 5 {
		c.t.Errorf("Take(%q, %d) at %v: %s: %+v", key, n, time.Duration(at), p, d)
	}
}

// done reports how many Decisions broke a rule in all.
func (c *checker) done() {
	if n := c.bad.Load(); n > 5 {
		c.t.Errorf("%d decisions broke a rule in all", n)
	}
}

// LinearizableRemaining: with the clock frozen, 16 goroutines take one
// request at a time, Take(key, 1), many more than the key holds: the
// allowed Decisions' Remaining values are exactly want(limit) − 1, ..., 1, 0,
// each reported once, whatever the interleaving, as a sequential caller
// would see them. Run round after round (round r freezes the clock at
// at(r), which must leave every key of the previous round idle), for limits
// 1, 2, 7, 64 and 500, with and without a Sweep racing the first admissions
// of each round, and with half the goroutines calling Allow instead (the
// Takes' values then stay distinct, and exactly want pass in all). Every
// Decision also passes Problem's rules.
func LinearizableRemaining(t *testing.T, newLimiter Constructor, window time.Duration, at func(round int) time.Duration, want func(limit int) int) {
	const goroutines = 16
	keys := []string{"x", "y"}
	rounds := 5
	if testing.Short() {
		rounds = 2
	}
	for _, limit := range []int{1, 2, 7, 64, 500} {
		for _, mode := range []struct{ sweep, mixed bool }{{false, false}, {true, false}, {false, true}} {
			sweep, mixed := mode.sweep, mode.mixed
			t.Run(fmt.Sprintf("limit=%d/sweep=%t/mixed=%t", limit, sweep, mixed), func(t *testing.T) {
				var now atomic.Int64
				lim, err := newLimiter(limit, window, now.Load)
				require.NoError(t, err)
				c := newChecker(t)
				defer c.done()
				wantPerKey := want(limit)
				calls := wantPerKey/goroutines*2 + 4 // per goroutine and key: 16·calls > 2·want
				for round := range rounds {
					now.Store(int64(at(round)))
					var mu sync.Mutex
					remaining := make([][]int, len(keys))
					allowed := make([]atomic.Int64, len(keys)) // by Allow, when mixed
					start := make(chan struct{})
					stop := make(chan struct{})
					var sweeper *sync.WaitGroup
					if sweep {
						sweeper, _ = SweepUntil(lim, stop)
					}
					var wg sync.WaitGroup
					for g := range goroutines {
						wg.Go(func() {
							mine := make([][]int, len(keys))
							<-start
							for i := range calls * len(keys) {
								k := (g + i) % len(keys)
								if mixed && g%2 == 1 {
									if lim.Allow(keys[k]) {
										allowed[k].Add(1)
									}
									continue
								}
								d := lim.Take(keys[k], 1)
								c.check(d, keys[k], 1, now.Load())
								if d.Allowed {
									mine[k] = append(mine[k], d.Remaining)
								}
							}
							mu.Lock()
							for k := range keys {
								remaining[k] = append(remaining[k], mine[k]...)
							}
							mu.Unlock()
						})
					}
					close(start)
					wg.Wait()
					close(stop)
					if sweeper != nil {
						sweeper.Wait()
					}
					for k, key := range keys {
						assert.EqualValues(t, wantPerKey, int64(len(remaining[k]))+allowed[k].Load(), "round %d key %s: passes", round, key)
						dup, missing := multisetDiff(remaining[k], wantPerKey)
						assert.Empty(t, dup, "round %d key %s: Remaining values reported more than once", round, key)
						if !mixed {
							assert.Empty(t, missing, "round %d key %s: Remaining values in [0, %d) never reported", round, key, wantPerKey)
						}
					}
				}
			})
		}
	}
}

// multisetDiff compares got with the set {0, 1, ..., n−1}: dup lists the
// values got holds more than once or out of the set (ascending, repeated
// as often as extra), missing those it lacks.
func multisetDiff(got []int, n int) (dup, missing []int) {
	seen := make([]int, n)
	for _, v := range got {
		if v < 0 || v >= n {
			dup = append(dup, v)
			continue
		}
		if seen[v]++; seen[v] > 1 {
			dup = append(dup, v)
		}
	}
	for v, c := range seen {
		if c == 0 {
			missing = append(missing, v)
		}
	}
	slices.Sort(dup)
	return dup, missing
}

// extremeReadings are the clock readings ExtremeClocks starts limiters at
// and moves them to: both ends of int64, far and near around 0.
var extremeReadings = []int64{
	math.MinInt64, math.MinInt64 + 1, -1 << 62, -1 << 40, -1, 0, 1, 1 << 40, 1 << 62, math.MaxInt64 - 1, math.MaxInt64,
}

// ExtremeClocks builds limiters of limit 1 and 3 per window, for each
// window given, with the clock at every one of a set of extreme readings
// (both ends of int64, far and near around 0), drains a key there, then
// moves the clock to every reading of the set (forward, back, by up to
// 2^64 − 1 ns) and asks again, for 1 until denied, for the limit, for more
// than the limit and for −1: every Decision passes Problem's rules (no
// negative duration, no denial with RetryAfter 0), whatever the clock does.
func ExtremeClocks(t *testing.T, newLimiter Constructor, windows ...time.Duration) {
	for _, window := range windows {
		for _, limit := range []int{1, 3} {
			t.Run(fmt.Sprintf("limit=%d/window=%v", limit, window), func(t *testing.T) {
				c := newChecker(t)
				defer c.done()
				for _, from := range extremeReadings {
					for _, to := range extremeReadings {
						var now atomic.Int64
						now.Store(from)
						lim, err := newLimiter(limit, window, now.Load)
						require.NoError(t, err)
						take := func(n int) hotlimit.Decision {
							d := lim.Take("k", n)
							if p := Problem(d, n); p != "" && c.bad.Add(1) <= 5 {
								t.Errorf("clock %d then %d: Take(k, %d) at %d: %s: %+v", from, to, n, now.Load(), p, d)
							}
							return d
						}
						for i := 0; i <= limit && take(1).Allowed; i++ {
						}
						now.Store(to)
						take(0)
						for i := 0; i <= limit && take(1).Allowed; i++ {
						}
						take(limit)
						take(limit + 1)
						take(-1)
						take(0)
					}
				}
			})
		}
	}
}

// BucketAtExtremeEpochs is for the algorithms of the token bucket's model
// (tokenbucket, gcra): a limiter of 2 per second whose epoch lies anywhere
// on the int64 line, ends included, decides exactly there (a drained key
// waits 500 ms for one, 1 s for both), but for a wait that would end past
// math.MaxInt64, which no clock reading reaches: that one says Never. And
// one whose clock then reads 2^64−1 ns behind its epoch says Never, as
// nothing refills for longer than a Duration holds.
func BucketAtExtremeEpochs(t *testing.T, newLimiter Constructor) {
	const ms = time.Millisecond
	for _, at := range []int64{
		math.MinInt64, math.MinInt64 + 1, -1, 0,
		math.MaxInt64 - int64(time.Second), math.MaxInt64 - int64(750*ms), math.MaxInt64 - int64(500*ms),
		math.MaxInt64 - int64(500*ms) + 1, math.MaxInt64 - 1, math.MaxInt64,
	} {
		var now atomic.Int64
		now.Store(at)
		lim, err := newLimiter(2, time.Second, now.Load)
		require.NoError(t, err)
		assert.True(t, lim.Allow("k"), "at %d", at)
		assert.True(t, lim.Take("k", 1).Allowed, "at %d", at)
		d := lim.Take("k", 1)
		assert.False(t, d.Allowed, "at %d", at)
		left := hotlimit.Never // the longest wait a clock reading ends
		if at > 0 {
			left = time.Duration(math.MaxInt64 - at)
		}
		want := func(wait time.Duration) time.Duration {
			if wait > left {
				return hotlimit.Never
			}
			return wait
		}
		assert.Equal(t, want(500*ms), d.RetryAfter, "at %d", at)
		assert.Equal(t, want(time.Second), d.ResetAfter, "at %d", at)
	}
	var now atomic.Int64
	now.Store(math.MaxInt64)
	lim, err := newLimiter(2, time.Second, now.Load)
	require.NoError(t, err)
	now.Store(math.MinInt64)
	require.True(t, lim.Take("k", 2).Allowed)
	assert.Equal(t, hotlimit.Decision{Limit: 2, RetryAfter: hotlimit.Never, ResetAfter: hotlimit.Never}, lim.Take("k", 1))
}
