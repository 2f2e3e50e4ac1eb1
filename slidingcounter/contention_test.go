package slidingcounter_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// hookClock is a fake clock whose next reading first runs a hook: the hook
// sees the reading the caller gets, and may move the clock and make other
// calls before the caller goes on, so a test can land a write between a
// caller's Load and its CAS.
type hookClock struct {
	now  atomic.Int64
	hook func()
}

func (c *hookClock) read() int64 {
	v := c.now.Load()
	if h := c.hook; h != nil {
		c.hook = nil
		h()
	}
	return v
}

// TestDenialOnKeptReadingReadsAgain: a failed CAS keeps the caller's clock
// reading, but a denial is never decided on it. At 2 per second, 2 pass at
// 0.1 s; A loads the word and reads 1.1 s; between A's Load and its CAS, B
// passes at 1.1 s, and the clock moves to 1.9 s. On its kept reading A would
// weigh the previous window at ⌊2·0.9⌋ = 1 and see 1 + 1 + 1 > 2; read again,
// the weight is ⌊2·0.1⌋ = 0 and A passes, as the model with A at 1.9 s does.
func TestDenialOnKeptReadingReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c hookClock
		lim, err := slidingcounter.New(2, time.Second, hotlimit.WithClock(c.read))
		require.NoError(t, err)
		c.now.Store(int64(100 * time.Millisecond))
		require.True(t, lim.Allow("k"))
		require.True(t, lim.Allow("k"))
		c.now.Store(int64(1100 * time.Millisecond))
		var b bool
		c.hook = func() {
			b = lim.Allow("k")
			c.now.Store(int64(1900 * time.Millisecond))
		}
		if take {
			d := lim.Take("k", 1)
			assert.True(t, d.Allowed, "A, read again at 1.9 s")
			assert.Zero(t, d.Remaining)
		} else {
			assert.True(t, lim.Allow("k"), "A, read again at 1.9 s")
		}
		assert.True(t, b, "B at 1.1 s")
		assert.Nil(t, c.hook, "the hook ran, inside A's call")
		assert.False(t, lim.Allow("k"), "2 counted in window 1")
	}
}

// TestRemainingLinearizable: under a frozen clock, 16 goroutines taking one
// at a time report each Remaining value Limit−1 … 0 exactly once among the
// allowed decisions, whatever the interleaving; with half of them calling
// Allow instead, the Takes' values are still distinct and exactly Limit pass.
func TestRemainingLinearizable(t *testing.T) {
	for _, limit := range []int{1, 2, 7, 64, 500} {
		for _, mixed := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/mixed=%t", limit, mixed), func(t *testing.T) {
				var now atomic.Int64
				now.Store(123456789)
				lim, err := slidingcounter.New(limit, time.Minute, hotlimit.WithClock(now.Load))
				require.NoError(t, err)
				var mu sync.Mutex
				seen := map[int]int{}
				var passed atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range 16 {
					wg.Go(func() {
						<-start
						for range limit/8 + 4 {
							if mixed && g%2 == 1 {
								if lim.Allow("k") {
									passed.Add(1)
								}
								continue
							}
							if d := lim.Take("k", 1); d.Allowed {
								passed.Add(1)
								mu.Lock()
								seen[d.Remaining]++
								mu.Unlock()
							}
						}
					})
				}
				close(start)
				wg.Wait()
				require.Equal(t, int64(limit), passed.Load(), "exactly Limit pass")
				for r, n := range seen {
					assert.Equal(t, 1, n, "Remaining %d reported %d times", r, n)
					assert.True(t, r >= 0 && r < limit, "Remaining %d in [0, %d)", r, limit)
				}
				if !mixed {
					assert.Len(t, seen, limit, "every value Limit−1 … 0")
				}
			})
		}
	}
}
