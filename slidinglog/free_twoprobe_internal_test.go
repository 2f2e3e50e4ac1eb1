package slidinglog

import (
	"math"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// freeFromFourProbes is freeFrom as it was before its first step read the two
// entries either side of the hint on their own: the four probes, then the
// search. It is the reference the two-probe step must agree with.
func (c *cell) freeFromFourProbes(h, base, L uint64, cutoff int64) uint64 {
	hint := c.hint.Load()
	k := hintAt(hint, h, L)
	if k >= 2 && k+1 < L {
		e := base + k - 2
		if e >= L {
			e -= L
		}
		var a, b, d, x int64
		if e+3 < L {
			w := c.slots[e : e+4 : e+4]
			a, b, d, x = w[0].Load()^freshStamp, w[1].Load()^freshStamp, w[2].Load()^freshStamp, w[3].Load()^freshStamp
		} else {
			a, b, d, x = c.load(e), c.load((e+1)%L), c.load((e+2)%L), c.load((e+3)%L)
		}
		ea, eb, ed, ex := expiredBit(a, cutoff), expiredBit(b, cutoff), expiredBit(d, cutoff), expiredBit(x, cutoff)
		if ea&^ex&(eb|^ed)&1 == 1 && a != packed.StampDead && b != packed.StampDead && d != packed.StampDead {
			end := k - 1 + eb + ed
			if end != k {
				w := end<<1 | hintCount
				if hint&hintCount != 0 && end < k {
					w = (h + end) << 1
				}
				c.hint.Store(w)
			}
			return end
		}
	}
	return c.search(h, base, cutoff, hint, k)
}

// TestFreeFromTwoProbesAgreesOnEveryRing: on every ring of 4 to 6 entries
// (the two-probe step needs k − 2 ≥ 0 and k + 1 < L) whose entries are each
// expired, counted, refunded with a counted or an expired time, the fresh
// value or a tombstone, in any order (not only an expired prefix: a refund
// read at a later clock, or a stale head, leaves other shapes), for every
// head position (the probes wrapping or not) and every hint in both forms,
// freeFrom returns what the four-probe step and the search returned before
// the two-probe step was added, and leaves the same hint. Where the two
// probes alone decide (entry k − 1 expired, not a tombstone, entry k
// counted), it is also what the search alone finds from the same hint, and
// neither writes the hint.
func TestFreeFromTwoProbesAgreesOnEveryRing(t *testing.T) {
	maxL := 6
	if testing.Short() {
		maxL = 5
	}
	const cutoff = int64(1 << 40)
	states := []int64{
		packed.PackStamp(cutoff-5, 0),                  // expired
		packed.PackStamp(cutoff+5, 1),                  // counted
		packed.Refunded(packed.PackStamp(cutoff+7, 0)), // refunded, its time in the window
		packed.Refunded(packed.PackStamp(cutoff-7, 1)), // refunded and expired
		freshStamp,       // never claimed
		packed.StampDead, // a tombstone
	}
	decided := 0
	for L := 4; L <= maxL; L++ {
		UL := uint64(L)
		rings := 1
		for range L {
			rings *= len(states)
		}
		var hints []uint64
		for ring := range rings {
			entry := make([]int64, L) // entry k: claim h − L + k
			for k, r := 0, ring; k < L; k, r = k+1, r/len(states) {
				entry[k] = states[r%len(states)]
			}
			for _, h := range []uint64{5 * UL, 5*UL + 1, 5*UL + UL/2, 6*UL - 1, math.MaxUint64} {
				base := h % UL
				c, ref, srch := &cell{slots: make([]atomic.Int64, L)}, &cell{slots: make([]atomic.Int64, L)}, &cell{slots: make([]atomic.Int64, L)}
				for k, v := range entry {
					for _, x := range []*cell{c, ref, srch} {
						x.slots[(base+uint64(k))%UL].Store(v ^ freshStamp)
					}
				}
				hints = append(hints[:0], 0, math.MaxUint64, math.MaxUint64-1)
				for k := range UL + 1 {
					hints = append(hints, (h+k)<<1, k<<1|hintCount)
				}
				for _, hint := range hints {
					for _, x := range []*cell{c, ref, srch} {
						x.hint.Store(hint)
					}
					got := c.freeFrom(h, base, UL, cutoff)
					want := ref.freeFromFourProbes(h, base, UL, cutoff)
					require.Equal(t, want, got, "L %d, head %d, ring %x, hint %#x: the count", L, h, entry, hint)
					require.Equal(t, ref.hint.Load(), c.hint.Load(), "L %d, head %d, ring %x, hint %#x: the hint left", L, h, entry, hint)

					k := hintAt(hint, h, UL)
					if k < 2 || k+1 >= UL {
						continue
					}
					b, d := entry[k-1], entry[k]
					if expiredBit(b, cutoff) == 1 && expiredBit(d, cutoff) == 0 && b != packed.StampDead {
						decided++
						require.Equal(t, k, got, "L %d, head %d, ring %x, hint %#x: the two probes' end", L, h, entry, hint)
						require.Equal(t, k, srch.search(h, base, cutoff, hint, k), "L %d, head %d, ring %x, hint %#x: the search's end", L, h, entry, hint)
						require.Equal(t, hint, c.hint.Load(), "the two probes write no hint")
						require.Equal(t, hint, srch.hint.Load(), "nor does the search that finds the end at the hint")
					}
				}
			}
		}
	}
	require.Positive(t, decided, "some rings are decided by the two probes")
}
