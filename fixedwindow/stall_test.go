package fixedwindow_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// stallRun is one random sequence of calls on one key, in which a call may
// stall between its clock reading and its word: other calls (takes, refunds,
// sweeps) land meanwhile, and the clock moves on, forward only. It keeps the
// conservation law of the fixed window: in every window, the requests
// counted there (by the receipts' windows) less those given back (by a refund
// made while the receipt's window is the current one) never exceed the
// limit; and each decision agrees with that count.
type stallRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    limitertest.HookClock
	lim      *fixedwindow.Limiter
	limit    int
	window   int64
	held     map[int64]int // window index → requests counted less refunded
	receipts []hotlimit.Receipt
}

func (r *stallRun) index(at int64) int64 { return models.FloorDiv(at, r.window) }

// call makes one random call; stall lets a TakeReceipt stall, running more
// calls inside its clock reading.
func (r *stallRun) call(stall bool, msg string) {
	switch p := r.rng.IntN(10); {
	case p < 6:
		n := 1 + r.rng.IntN(r.limit)
		if r.rng.IntN(2) == 0 {
			n = 1
		}
		if stall {
			r.clock.Hook = func() {
				for i := range 1 + r.rng.IntN(4) {
					r.tick()
					r.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
				}
			}
		}
		d, rc := r.lim.TakeReceipt("k", n)
		r.clock.Hook = nil
		if d.Allowed {
			i := r.index(rc.At)
			r.held[i] += n
			assert.LessOrEqual(r.t, r.held[i], r.limit, "%s: window %d holds more than the limit", msg, i)
			assert.Equal(r.t, r.limit-r.held[i], d.Remaining, "%s: Remaining, window %d", msg, i)
			r.receipts = append(r.receipts, rc)
		} else {
			assert.Positive(r.t, d.RetryAfter, msg)
			if !stall { // a stalled call may have judged an earlier window
				cur := r.index(r.clock.Now.Load())
				assert.Greater(r.t, r.held[cur]+n, r.limit, "%s: denied %d with %d counted in window %d", msg, n, r.held[cur], cur)
			}
		}
	case p < 9:
		if len(r.receipts) == 0 {
			return
		}
		k := r.rng.IntN(len(r.receipts))
		rc := r.receipts[k]
		r.receipts = append(r.receipts[:k], r.receipts[k+1:]...)
		r.lim.Refund("k", rc)
		if i := r.index(rc.At); r.index(r.clock.Now.Load()) <= i {
			r.held[i] -= rc.N // the receipt's window is still the current one
		}
	default:
		r.lim.Sweep()
	}
}

// tick moves the clock forward: not at all, a little, or across a window.
func (r *stallRun) tick() {
	switch r.rng.IntN(4) {
	case 0:
	case 1:
		r.clock.Now.Add(1 + r.rng.Int64N(r.window/4))
	default:
		r.clock.Now.Add(r.rng.Int64N(r.window + r.window/2))
	}
}

// TestStalledCallersKeepTheLimitPerWindow: random sequences of takes,
// refunds and sweeps on one key, where a take may read the clock, stall
// while other calls land and the clock moves into later windows, and only
// then load and write its word. No window ever counts more than the limit,
// Remaining is the limit less the count, and a call that did not stall is
// denied only when its window has no room.
func TestStalledCallersKeepTheLimitPerWindow(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 500
	}
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 7))
		r := &stallRun{t: t, rng: rng, limit: 1 + rng.IntN(4), window: int64(time.Second), held: map[int64]int{}}
		r.clock.Now.Store(rng.Int64N(1<<40) - 1<<39)
		var err error
		r.lim, err = fixedwindow.New(r.limit, time.Duration(r.window), hotlimit.WithClock(r.clock.Read))
		require.NoError(t, err)
		for i := range 40 {
			r.tick()
			r.call(rng.IntN(3) == 0, fmt.Sprintf("seq %d (limit %d) call %d", seq, r.limit, i))
			if t.Failed() {
				return
			}
		}
	}
}
