package slidinglog

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// TestFreeFromEveryHintOnEverySmallRing: for every limit from 1 to 8 (where
// the four probes around entry k reach both ends of the ring, k − 2 = 0 and
// k + 1 = L − 1), every position of the head in the slots (the probes wrap
// or not), heads near 2^64 (where a hint as a claim number loses its top
// bit), every end of the expired prefix, every set of refunded entries in it
// (refunded entries whose times still count), and every hint in both forms,
// free is the linear count of the ring; and with a tombstone under the head,
// as Sweep leaves one, it is that count or a fresh key's L.
func TestFreeFromEveryHintOnEverySmallRing(t *testing.T) {
	const t0 = int64(time.Hour)
	for limit := 1; limit <= 8; limit++ {
		l, _ := newTest(t, limit)
		L := uint64(limit)
		cutoff := t0 - l.window
		heads := []uint64{math.MaxUint64}
		for h := 3 * L; h < 4*L; h++ {
			heads = append(heads, h)
		}
		for _, h := range heads {
			for end := uint64(0); end <= L; end++ {
				for mask := uint64(0); mask < 1<<end; mask++ {
					c := &cell{slots: make([]atomic.Int64, L)}
					c.head.Store(h)
					for k := range L {
						at := cutoff + 1 + int64(k) // counted
						if k < end {
							at = cutoff - int64(end-k) // expired, in claim order
						}
						v := packed.PackStamp(at, (h/L+1)&1) // claim h + k − L: the previous round
						if k >= L-h%L {
							v = packed.PackStamp(at, (h/L)&1) // past the wrap: this round's parity is the last one's for k ≥ L − base
						}
						if mask>>k&1 == 1 {
							v = packed.Refunded(packed.PackStamp(cutoff+1+int64(k), uint64(v&1)))
						}
						c.slots[(h%L+k)%L].Store(v ^ freshStamp)
					}
					want := uint64(0)
					for want < L && expiredBit(c.load((h%L+want)%L), cutoff) == 1 {
						want++
					}
					require.Equal(t, end, want, "the ring as built")
					hints := []uint64{0, math.MaxUint64, math.MaxUint64 - 1}
					for k := range L + 2 {
						hints = append(hints, (h+k)<<1, k<<1|hintCount)
					}
					for _, hint := range hints {
						c.hint.Store(hint)
						require.Equal(t, want, l.free(c, h, t0), "limit %d, head %d, end %d, refunded %b, hint %#x", limit, h, end, mask, hint)
					}
					c.slots[h%L].Store(packed.StampDead ^ freshStamp)
					for _, hint := range hints {
						c.hint.Store(hint)
						require.Contains(t, []uint64{want, L}, l.free(c, h, t0), "a tombstone under the head: limit %d, head %d, end %d, refunded %b, hint %#x", limit, h, end, mask, hint)
					}
				}
			}
		}
	}
}
