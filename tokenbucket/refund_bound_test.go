package tokenbucket

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestRefundsKeepTheCountWithinKPlusOneUnits tries to break the documented
// bound: random takes with receipts and refunds of them, at random
// nanoseconds (so that readings fall between units) of a clock that never
// goes back, on every policy of the differential tests and two at F = 0.
// The model admits what the limiter admits and forgets what it evicts (the
// same history); after each call a key's count in the limiter lies within k + 1 units of the exact
// model's, k the refunds the key has had. The largest excess over k seen must
// also come near 1, or the run did not press on the bound.
func TestRefundsKeepTheCountWithinKPlusOneUnits(t *testing.T) {
	seqs, calls := 150, 150
	if testing.Short() {
		seqs = 30
	}
	configs := append(diffConfigs[:len(diffConfigs):len(diffConfigs)], struct {
		limit  int
		window time.Duration
		burst  int
	}{1 << 20, time.Second, 0}, struct {
		limit  int
		window time.Duration
		burst  int
	}{1 << 16, time.Millisecond, 1 << 10})
	worst := new(big.Rat) // the largest |difference| − k, in units
	for ci, cfg := range configs {
		burst := burstOf(cfg.limit, cfg.burst)
		r := rand.New(rand.NewPCG(uint64(ci), 77))
		for seq := range seqs {
			epoch := r.Int64N(2e15) - 1e15
			tw := newBurstTwin(t, cfg.limit, burst, cfg.window, epoch, time.Nanosecond)
			type held struct {
				key string
				r   hotlimit.Receipt
			}
			var receipts []held
			refunds := map[string]int64{}
			unit := tw.unitNs
			var log []string // the sequence's calls, shown when it fails
			for i := range calls {
				switch p := r.IntN(10); {
				case p < 6:
					tw.now.Add(r.Int64N(3*unit + 1))
				default:
					tw.now.Add(abs(int64(randomStep(r, cfg.limit, cfg.window, time.Nanosecond))))
				}
				now := tw.now.Load()
				mt, _ := tw.m.At(now)
				key := []string{"a", "b"}[r.IntN(2)]
				if len(receipts) > 0 && r.IntN(5) < 2 {
					j := r.IntN(len(receipts))
					h := receipts[j]
					receipts = append(receipts[:j], receipts[j+1:]...)
					key = h.key
					tw.lim.Refund(key, h.r)
					log = append(log, fmt.Sprintf("%d: Refund(%q, %+v)", now-epoch, key, h.r))
					tw.m.Refund(key, h.r, now)
					refunds[key]++
					if _, ok := tw.lim.cells.Peek(key); !ok {
						// The refund filled the bucket and evicted the
						// key: the model forgets it too (a clock that
						// steps back then finds it fresh), and its count
						// starts again from Cap, as the limiter's.
						tw.m.Forget(key)
						refunds[key] = 0
					}
				} else {
					n := 1 + r.IntN(min(burst, 3))
					if r.IntN(4) == 0 {
						n = 1 + r.IntN(burst)
					}
					d, rc := tw.lim.TakeReceipt(key, n)
					log = append(log, fmt.Sprintf("%d: TakeReceipt(%q, %d): %t", now-epoch, key, n, d.Allowed))
					if d.Allowed {
						tw.m.Admit(key, mt, int64(n))
						receipts = append(receipts, held{key, rc})
					}
				}
				diff := new(big.Rat).SetUint64(tw.units(key))
				diff.Sub(diff, tw.inUnits(tw.m.Tokens(key, mt)))
				diff.Abs(diff)
				excess := diff.Sub(diff, new(big.Rat).SetInt64(refunds[key]))
				if excess.Cmp(big.NewRat(1, 1)) >= 0 {
					t.Fatalf("%s\n%v seq %d call %d: key %q after %d refunds: limiter %d units, model %s units", strings.Join(log, "\n"), tw, seq, i, key, refunds[key], tw.units(key), tw.inUnits(tw.m.Tokens(key, mt)).FloatString(3))
				}
				if excess.Cmp(worst) > 0 {
					worst.Set(excess)
				}
			}
		}
	}
	f, _ := worst.Float64()
	t.Logf("largest |limiter − model| − k: %.4f units", f)
	assert.Greater(t, f, 0.9, "the runs came near the bound")
}

// TestRefundsCanPutTheCountNearlyKPlusOneUnitsBelowTheModel: the bound is
// nearly reached. At 65536 per millisecond (F = 0: a unit is a token,
// refilled every 15.26 ns), the bucket drained but for 3000 tokens at 0, and
// three takes of 1000 at 15 ns (0.983 of a unit of time, nothing refilled on
// the grid) refunded at 16 ns (1.049: one unit refilled on the grid, 0.066 of
// one in the exact model): each refund deducts a whole token, 0.934 more
// than the model's, and at 30 ns (1.966) the grid still counts one unit
// refilled where the model counts 1.966. The bucket holds 2998 tokens, the
// model 3001.77: 3.77 below it, after 3 refunds (the bound is 4), and a Take
// of 3001 that the model admits is denied.
func TestRefundsCanPutTheCountNearlyKPlusOneUnitsBelowTheModel(t *testing.T) {
	tw := newBurstTwin(t, 1<<16, 1<<16, time.Millisecond, 0, time.Nanosecond)
	require.Zero(t, tw.lim.b.FracBits)
	take := func(key string, n int) hotlimit.Receipt {
		mt, _ := tw.m.At(tw.now.Load())
		d, r := tw.lim.TakeReceipt(key, n)
		require.True(t, d.Allowed)
		tw.m.Admit(key, mt, int64(n))
		return r
	}
	take("k", 1<<16-3000)
	tw.now.Store(15)
	rs := []hotlimit.Receipt{take("k", 1000), take("k", 1000), take("k", 1000)}
	tw.now.Store(16)
	for _, r := range rs {
		tw.lim.Refund("k", r)
		tw.m.Refund("k", r, 16)
	}
	tw.now.Store(30)
	model := tw.m.Tokens("k", 30)
	diff, _ := new(big.Rat).Sub(model, new(big.Rat).SetUint64(tw.units("k"))).Float64()
	assert.Equal(t, uint64(2998), tw.units("k"))
	assert.InDelta(t, 3.77, diff, 0.01, "the model holds %s", model.FloatString(3))
	assert.Equal(t, 1, model.Cmp(big.NewRat(3001, 1)), "the model admits 3001")
	assert.False(t, tw.lim.Take("k", 3001).Allowed, "the bucket denies 3001")
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestAStepBackBehindARefundCanPutTheCountFarFromTheModel: the k + 1 bound
// needs a clock that never goes back. A refund writes the key only when it
// gives something, and the grid's deduction and the exact one can fall on
// either side of the refund's tokens; the write also records the refill up
// to its time, which a clock that then steps back no longer adds. At 65536
// per millisecond (F = 0), 1000 taken at 15 ns (0.983 of a unit of time) and
// refunded at 15273 ns (1000.93: 1000 units refilled on the grid, 999.95
// exactly): the bucket deducts the whole 1000 and writes nothing, the model
// gives back 0.05 and writes the key refilled to 15273 ns; both hold 65536 there. Back
// at 15 ns the bucket holds what the Take left, 64536, where the model holds
// 65536: 1000 tokens apart after one refund.
func TestAStepBackBehindARefundCanPutTheCountFarFromTheModel(t *testing.T) {
	tw := newBurstTwin(t, 1<<16, 1<<16, time.Millisecond, 0, time.Nanosecond)
	require.Zero(t, tw.lim.b.FracBits)
	tw.now.Store(15)
	d, r := tw.lim.TakeReceipt("k", 1000)
	require.True(t, d.Allowed)
	tw.m.Admit("k", 15, 1000)
	tw.now.Store(15273)
	tw.lim.Refund("k", r)
	tw.m.Refund("k", r, 15273)
	assert.Equal(t, uint64(1<<16), tw.units("k"))
	assert.Equal(t, big.NewRat(1<<16, 1), tw.m.Tokens("k", 15273))
	tw.now.Store(15)
	assert.Equal(t, uint64(1<<16-1000), tw.units("k"), "the bucket, back at the Take")
	assert.Equal(t, big.NewRat(1<<16, 1), tw.m.Tokens("k", 15), "the model, back at the Take")
}
