package slidinglog

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestHammeredRingHoldsEveryClaimInOrder: many goroutines admit on one key,
// with a clock that moves a window on every reading, so that most requests
// pass; once they are done, the ring holds exactly the claims that passed:
// the next claim is their number, the head lags it by at most maxLag(L),
// and the last L slots hold claims of their own round's parity, with logged
// times in claim order.
func TestHammeredRingHoldsEveryClaimInOrder(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 15, 16, 17, 40} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			var now atomic.Int64
			clock := func() int64 { return now.Add(int64(time.Millisecond)) }
			l, err := New(limit, time.Millisecond, hotlimit.WithClock(clock))
			require.NoError(t, err)
			const workers = 8
			calls := 3000
			if testing.Short() {
				calls = 300
			}
			var passed atomic.Uint64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range calls {
						var ok bool
						switch (w + i) % 4 {
						case 0:
							ok = l.Allow("k")
						case 1:
							ok, _ = l.AllowRemaining("k")
						case 2:
							ok = l.Take("k", 1).Allowed
						default:
							l.Take("k", 0)
						}
						if ok {
							passed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			c := l.cells.Load("k")
			require.NotNil(t, c)
			L := uint64(limit)
			n := passed.Load()
			head := c.head.Load()
			assert.LessOrEqual(t, head, n, "the head is never past the claims landed")
			assert.LessOrEqual(t, n, head+maxLag(L), "the claims landed are never past head + maxLag")
			var s snapshot
			for ok := false; !ok; {
				s, ok = c.read()
			}
			assert.Equal(t, n, s.h, "the next claim is the number of requests that passed")
			prev := int64(packed.MinStamp)
			for k := n - min(n, L); k < n; k++ {
				tk, parity := packed.UnpackStamp(c.load(k % L))
				assert.Equal(t, (k/L)&1, parity, "claim %d: its round's parity", k)
				assert.LessOrEqual(t, prev, tk, "claim %d: logged times in claim order", k)
				prev = tk
			}
		})
	}
}
