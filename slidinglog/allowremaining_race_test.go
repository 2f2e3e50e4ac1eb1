package slidinglog_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestAllowRemainingIsLinearizable: under a clock frozen for a round, in
// which 16 goroutines make a third of the limit's calls, and moved on by a
// third of a window between rounds (so that the entries of one round leave
// the window while those of the next two count, and the count of free
// entries starts from where the last round's ended, or moved on), the
// Remaining values that AllowRemaining reports with its m admissions,
// counted by the two- and four-probe steps of the count, are exactly those
// a sequential caller would see, each once: from the entries free at the
// round's start, less one, down to that less m.
func TestAllowRemainingIsLinearizable(t *testing.T) {
	const goroutines = 16
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	for _, limit := range []int{2, 7, 64} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			lim, err := slidinglog.New(limit, time.Second, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			admitted, partial := 0, 0
			for round := range rounds {
				free := lim.Take("k", 0).Remaining
				if free > 0 && free < limit {
					partial++
				}
				// Exactly this many calls in the round, whatever the
				// scheduler does, so that rounds start partly free.
				quota := int64(limit/3 + 1)
				var mu sync.Mutex
				got := []int{}
				var calls atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for range goroutines {
					wg.Go(func() {
						<-start
						for range limit/goroutines + 2 {
							if calls.Add(1) > quota {
								return
							}
							if ok, r := lim.AllowRemaining("k"); ok {
								mu.Lock()
								got = append(got, r)
								mu.Unlock()
							}
						}
					})
				}
				close(start)
				wg.Wait()
				slices.Sort(got)
				want := []int{}
				for r := free - len(got); r < free; r++ {
					want = append(want, r)
				}
				require.Equal(t, want, got, "round %d: from %d free", round, free)
				assert.Equal(t, free-len(got), lim.Take("k", 0).Remaining, "round %d", round)
				admitted += len(got)
				now.Add(int64(time.Second / 3))
			}
			assert.Positive(t, admitted, "requests passed")
			if limit > 2 {
				assert.Positive(t, partial, "some rounds start with part of the log in the window")
			}
		})
	}
}
