package fixedwindow_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
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

// TestDenialOnStaleReadingReadsAgain: the clock is read before the word,
// but a denial is never decided on a reading behind the stored window. At 1
// per second, A reads the clock at 0.9 s; before A loads the word, B passes
// at 1.1 s (window 1, now full) and the clock moves to 2.1 s. On its reading
// (window 0) A would count against B's full window; read again, it starts
// window 2 and passes, as the model with A at 2.1 s does.
func TestDenialOnStaleReadingReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c hookClock
		lim, err := fixedwindow.New(1, time.Second, hotlimit.WithClock(c.read))
		require.NoError(t, err)
		c.now.Store(int64(900 * time.Millisecond))
		var b bool
		c.hook = func() {
			c.now.Store(int64(1100 * time.Millisecond))
			b = lim.Allow("k")
			c.now.Store(int64(2100 * time.Millisecond))
		}
		if take {
			assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1), "A, read again at 2.1 s")
		} else {
			assert.True(t, lim.Allow("k"), "A, read again at 2.1 s")
		}
		assert.True(t, b, "B at 1.1 s")
		assert.Nil(t, c.hook, "the hook ran, inside A's call")
		assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 900 * time.Millisecond, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1))
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
				lim, err := fixedwindow.New(limit, time.Minute, hotlimit.WithClock(now.Load))
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
