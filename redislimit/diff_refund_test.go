package redislimit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// refundModel is a sequential model that also refunds.
type refundModel interface {
	Take(key string, n int, now int64) hotlimit.Decision
	Refund(key string, r hotlimit.Receipt, now int64)
}

// refundConfigs are the policies of TestDifferentialRefunds: windows that
// are not whole seconds (nor whole microseconds), bursts below and above
// the limit, and limits near the largest New accepts.
var refundConfigs = func() []hotlimit.Config {
	var cs []hotlimit.Config
	for _, a := range algorithms {
		cs = append(cs,
			hotlimit.Config{Algorithm: a, Limit: 5, Window: time.Second},
			hotlimit.Config{Algorithm: a, Limit: 3, Window: 7*time.Millisecond + 3},
			hotlimit.Config{Algorithm: a, Limit: 7, Window: 1234567891},
			hotlimit.Config{Algorithm: a, Limit: 1, Window: 24 * time.Hour},
			hotlimit.Config{Algorithm: a, Limit: 1000, Window: time.Minute + 1},
		)
	}
	return append(cs,
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Burst: 10},
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 3, Window: time.Second, Burst: 8},
		// more than the burst refilled per tick
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: 1, Burst: 2},
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1000, Window: 7, Burst: 3},
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: 1, Burst: 2},
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1000, Window: 7, Burst: 3},
		// burst × window just below 2^52
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1 << 30, Window: 1<<22 - 1, Burst: 1<<30 - 1},
		// window × (limit + 1) just below 2^52
		hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1<<30 - 2, Window: 1<<22 - 1},
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 30, Window: 1<<22 - 1, Burst: 1<<30 - 1},
		// the largest exact limit, on a 64-bit int
		hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: min(1<<52-1, math.MaxInt), Window: 1<<50 - 3},
	)
}()

// TestDifferentialRefunds replays random sequences of Take(key, n), n in
// [-1, burst+1] (and the burst's size at the largest limits), of refunds of
// earlier receipts (each once, some at once, some later, and of some
// taken at once by RefundNowContext instead of their receipt; for the
// algorithms whose models refund: all but the sliding log, which
// TestSlidingLogRefundDifferential covers) and of clock steps (zero, small,
// whole windows, many windows, and back, some far back) against the
// sequential model: every Decision must be the model's, field by field, and
// so must a report (n = 0) after each refund.
func TestDifferentialRefunds(t *testing.T) {
	srv := redistest.Start(t)
	seqs, steps := 3, 200
	if testing.Short() {
		seqs = 1
	}
	for ci, c := range refundConfigs {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			var clock atomic.Int64
			lim := newExact(t, newClient(t, srv), c, hotlimit.WithClock(clock.Load), redislimit.WithFailPolicy(redislimit.FailClosed))
			burst := burstOf(c)
			ctx := context.Background()
			for seq := range seqs {
				r := rand.New(rand.NewPCG(uint64(ci)+100, uint64(seq)))
				m := newModel(c)
				refunder, refunds := m.(refundModel)
				// The sliding log's model refunds as the in-memory limiter does,
				// not as the script: TestSlidingLogRefundDifferential covers it.
				refunds = refunds && c.Algorithm != hotlimit.SlidingLog
				lo, hi := int64(-1<<51), int64(1<<51)
				if c.Algorithm.HasBurst() {
					lo = 0 // see newModel
				}
				now := lo + r.Int64N(hi-lo)
				keys := []string{fmt.Sprintf("r%d-%d-a", ci, seq), fmt.Sprintf("r%d-%d-b", ci, seq)}
				type held struct {
					key string
					r   hotlimit.Receipt
				}
				var receipts []held
				var trace []string
				defer func() {
					if t.Failed() {
						t.Logf("trace:\n%s", strings.Join(trace, "\n"))
					}
				}()
				check := func(step int, key string, n int) (hotlimit.Decision, hotlimit.Receipt, bool) {
					clock.Store(now)
					want := m.Take(key, n, now)
					got, rc, err := lim.TakeReceiptContext(ctx, key, n)
					require.NoError(t, err)
					trace = append(trace, fmt.Sprintf("Take(%q, %d) at %d: %+v %+v", key, n, now, got, rc))
					return got, rc, assert.Equal(t, want, got, "seq %d step %d: Take(%q, %d) at %d", seq, step, key, n, now)
				}
				for step := range steps {
					var s int64
					w := int64(c.Window)
					switch p := r.IntN(20); {
					case p == 0:
						s = w * (2 + r.Int64N(1000))
					case p == 1:
						s = -r.Int64N(4 * w)
					case p == 2:
						s = -r.Int64N(hi - lo) // far back
					default:
						s = randomStep(r, c)
					}
					if now+s > hi || now+s < lo {
						s = -s
					}
					if now+s > hi || now+s < lo {
						s = 0
					}
					now += s
					key := keys[r.IntN(len(keys))]
					if p := r.IntN(4); p == 0 && refunds && len(receipts) > 0 {
						i := r.IntN(len(receipts))
						h := receipts[i]
						receipts = append(receipts[:i], receipts[i+1:]...)
						clock.Store(now)
						require.NoError(t, lim.RefundContext(ctx, h.key, h.r))
						trace = append(trace, fmt.Sprintf("Refund(%q, %+v) at %d", h.key, h.r, now))
						refunder.Refund(h.key, h.r, now)
						if _, _, ok := check(step, h.key, 0); !ok {
							t.Logf("after Refund(%q, %+v) at %d", h.key, h.r, now)
							return
						}
						continue
					}
					n := randomN(r, burst)
					if burst > 1<<20 && r.IntN(3) == 0 {
						n = burst - r.IntN(3)
					}
					d, rc, ok := check(step, key, n)
					if !ok {
						return
					}
					if d.Allowed && n > 0 && refunds {
						receipts = append(receipts, held{key, rc})
						if r.IntN(3) == 0 { // refunded at once
							receipts = receipts[:len(receipts)-1]
							if r.IntN(2) == 0 { // without the receipt: the same give-back
								require.NoError(t, lim.RefundNowContext(ctx, key, n))
								trace = append(trace, fmt.Sprintf("RefundNow(%q, %d) at %d", key, n, now))
							} else {
								require.NoError(t, lim.RefundContext(ctx, key, rc))
								trace = append(trace, fmt.Sprintf("Refund(%q, %+v) at %d", key, rc, now))
							}
							refunder.Refund(key, rc, now)
							if _, _, ok := check(step, key, 0); !ok {
								t.Logf("after Refund(%q, %+v) at once", key, rc)
								return
							}
						}
					}
				}
			}
		})
	}
}
