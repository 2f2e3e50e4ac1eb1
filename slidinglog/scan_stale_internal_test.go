package slidinglog

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestScanFromAnyStaleHeadIsExactOrRetries: a caller can read the head, then
// stall while any number of claims land, and scan from the head it read. On
// random logs of one key (Take with n from 1 to 3, refunds, a clock that
// moves or not), with the head left anywhere it can lawfully be (between
// maxLag(L) below the claims landed and them), a scan from every head up to
// 3L below it either asks to read again, or finds the next claim, its slot
// and stamp, and the newest logged time, as they are.
func TestScanFromAnyStaleHeadIsExactOrRetries(t *testing.T) {
	for _, limit := range []int{1, 2, 3, 5, 16, 17, 33} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(limit), 7))
			l, now := newTest(t, limit)
			now.Store(int64(time.Hour))
			L := uint64(limit)
			claims := uint64(0)
			var rs []hotlimit.Receipt
			for step := range 3000 {
				switch rng.IntN(6) {
				case 0:
					now.Add(rng.Int64N(int64(2 * time.Second)))
				case 1:
					if len(rs) > 0 {
						l.Refund("k", rs[rng.IntN(len(rs))])
					}
				default:
					n := 1 + rng.IntN(min(limit, 3))
					d, r := l.TakeReceipt("k", n)
					if d.Allowed {
						claims += uint64(n)
						rs = append(rs, r)
					}
				}
				c := l.cells.Load("k")
				if c == nil {
					continue
				}
				// Leave the head anywhere invariant H allows.
				if claims > 0 && rng.IntN(2) == 0 {
					lag := uint64(rng.IntN(int(maxLag(L)) + 1))
					c.head.Store(claims - min(claims, lag))
				}
				head := c.head.Load()
				for h0 := head - min(head, 3*L); h0 <= head; h0++ {
					s, ok := c.scan(h0)
					c.head.Store(head) // undo a far scan's advance
					if !ok {
						continue
					}
					require.Equal(t, claims, s.h, "step %d, h0 %d, head %d", step, h0, head)
					require.Equal(t, claims%L, s.i)
					require.Equal(t, c.load(s.i), s.v)
					if claims > 0 {
						tn, _ := packed.UnpackStamp(c.load((claims - 1) % L))
						require.Equal(t, tn, s.newest, "step %d, h0 %d", step, h0)
					}
				}
			}
		})
	}
}
