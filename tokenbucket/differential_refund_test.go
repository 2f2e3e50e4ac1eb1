package tokenbucket

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit"
)

// refund gives back r on the limiter and on the model at the clock's time,
// and checks the key's state after it against the model's (see twin). A
// refund that fills the bucket evicts the key, and the model forgets it
// then; one that finds it full already leaves it held, as it is.
func (tw *twin) refund(key string, r hotlimit.Receipt, msg string) {
	now := tw.now.Load()
	t, _ := tw.m.At(now)
	wasFull := tw.m.Tokens(key, t).Cmp(tw.m.Cap) == 0
	_, wasHeld := tw.lim.cells.Peek(key)
	tw.lim.Refund(key, r)
	tw.m.Refund(key, r, now)
	tw.checkState(key, msg)
	_, held := tw.lim.cells.Peek(key)
	filled := !wasFull && tw.m.Tokens(key, t).Cmp(tw.m.Cap) == 0
	assert.Equal(tw.t, filled, wasHeld && !held, "%s: key %q filled by the refund: %t; evicted by it: %t", msg, key, filled, wasHeld && !held)
	if !held {
		tw.m.Forget(key)
	}
}

// TestDifferentialWithRefunds is TestDifferential with refunds of earlier
// takes among the calls: each receipt at most once, some at once, some long
// after, some after the clock stepped back (behind the Take, behind the
// key's latest write, behind the epoch). The clock moves on the grid where
// the units are exact (unitGrid), so that a refund deducts what the model
// does (see the package documentation); every decision, every state, every
// receipt, every eviction and every sweep must agree with the model's.
func TestDifferentialWithRefunds(t *testing.T) {
	seqs, calls := 300, 120
	if testing.Short() {
		seqs = 50
	}
	keys := []string{"a", "b", "c"}
	type held struct {
		key string
		r   hotlimit.Receipt
	}
	for ci, cfg := range diffConfigs {
		burst := burstOf(cfg.limit, cfg.burst)
		grid := time.Duration(unitGrid(cfg.limit, burst, cfg.window))
		t.Run(fmt.Sprintf("limit=%d/window=%v/burst=%d/grid=%v", cfg.limit, cfg.window, burst, grid), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 9))
			refunds := 0
			for seq := range seqs {
				epoch := r.Int64N(2e15) - 1e15
				tw := newBurstTwin(t, cfg.limit, burst, cfg.window, epoch, grid)
				if !tw.exact {
					t.Fatalf("%v: the unit grid %v should be exact", tw, grid)
				}
				limitT := tw.lim.soft / 2 // as in TestDifferential
				var receipts []held
				hi := epoch
				for i := range calls {
					step := randomStep(r, cfg.limit, cfg.window, grid)
					if tw.now.Load()+int64(step)-epoch > limitT {
						break
					}
					tw.now.Add(int64(step))
					hi = max(hi, tw.now.Load())
					msg := fmt.Sprintf("%v seq %d step %d at %d back %d", tw, seq, i, tw.now.Load()-epoch, hi-tw.now.Load())
					switch p := r.IntN(30); {
					case p == 0:
						tw.sweep(msg)
					case p < 10 && len(receipts) > 0:
						j := r.IntN(len(receipts))
						h := receipts[j]
						receipts = append(receipts[:j], receipts[j+1:]...)
						tw.refund(h.key, h.r, fmt.Sprintf("%s: Refund(%q, %+v)", msg, h.key, h.r))
						refunds++
					case p < 18:
						key, n := keys[r.IntN(len(keys))], randomN(r, burst)
						now := tw.now.Load()
						mt, _ := tw.m.At(now)
						enough := tw.m.Tokens(key, mt).Cmp(new(big.Rat).SetInt64(int64(n))) >= 0
						d, rc := tw.lim.TakeReceipt(key, n)
						if d.Allowed && n >= 1 {
							tw.m.Admit(key, mt, int64(n))
							receipts = append(receipts, held{key, rc})
							assert.Equal(t, hotlimit.Receipt{N: n, At: max(now, epoch)}, rc, msg)
						} else {
							assert.Zero(t, rc, msg)
						}
						if n >= 1 && n <= burst {
							assert.Equal(t, enough, d.Allowed, "%s: TakeReceipt(%q, %d)", msg, key, n)
						}
						tw.checkState(key, msg)
					default:
						tw.take(keys[r.IntN(len(keys))], randomN(r, burst), r.IntN(2) == 0, r.IntN(4) == 0, msg)
					}
					if t.Failed() {
						return
					}
				}
			}
			assert.Greater(t, refunds, seqs, "refunds were made")
		})
	}
}
