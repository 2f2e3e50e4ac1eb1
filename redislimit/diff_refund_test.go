package redislimit_test

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
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
		// burst × window just below 2^52
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1 << 30, Window: 1<<22 - 1, Burst: 1<<30 - 1},
		// window × (limit + 1) just below 2^52
		hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1<<30 - 2, Window: 1<<22 - 1},
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 30, Window: 1<<22 - 1, Burst: 1<<30 - 1},
		hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1<<52 - 1, Window: 1<<50 - 3},
	)
}()

// TestDifferentialRefunds replays random sequences of Take(key, n), n in
// [-1, burst+1] (and the burst's size at the largest limits), of refunds of
// earlier receipts (each once, some at once, some later; for GCRA and the
// sliding counter, whose models refund, and the fixed window and token
// bucket, whose refunding models are fixedWindowRefunds and
// tokenBucketRefunds) and of clock steps (zero, small,
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
				switch c.Algorithm {
				case hotlimit.FixedWindow:
					m = &fixedWindowRefunds{limit: int64(c.Limit), window: int64(c.Window), keys: map[string]fixedWindowKey{}}
				case hotlimit.TokenBucket:
					m = newTokenBucketRefunds(c.Limit, burst, c.Window)
				}
				refunder, refunds := m.(refundModel)
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
							require.NoError(t, lim.RefundContext(ctx, key, rc))
							trace = append(trace, fmt.Sprintf("Refund(%q, %+v) at %d", key, rc, now))
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

// fixedWindowRefunds is models.FixedWindow with the fixed window's refunds
// (see hotlimit.Refunder): a refund lowers the count of the receipt's
// window, not below zero, while that window is the key's and has not ended;
// a key whose count is zero is fresh, as a key not held is.
type fixedWindowRefunds struct {
	limit, window int64
	keys          map[string]fixedWindowKey
}

type fixedWindowKey struct{ index, count int64 }

// Take is models.FixedWindow's Take.
func (m *fixedWindowRefunds) Take(key string, n int, now int64) hotlimit.Decision {
	idx := models.FloorDiv(now, m.window)
	st, ok := m.keys[key]
	if !ok || idx > st.index {
		st = fixedWindowKey{index: idx}
	}
	end := time.Duration((st.index+1)*m.window - now)
	d := hotlimit.Decision{Limit: int(m.limit)}
	switch {
	case n == 0:
		d.Allowed = true
	case n < 0 || int64(n) > m.limit:
		d.RetryAfter = hotlimit.Never
	case st.count+int64(n) <= m.limit:
		st.count += int64(n)
		m.keys[key] = st
		d.Allowed = true
	default:
		d.RetryAfter = end
	}
	d.Remaining = int(m.limit - st.count)
	if st.count > 0 {
		d.ResetAfter = end
	}
	return d
}

// Refund is the fixed window's Refund(key, r) at now.
func (m *fixedWindowRefunds) Refund(key string, r hotlimit.Receipt, now int64) {
	st, ok := m.keys[key]
	at := models.FloorDiv(r.At, m.window)
	if r.N < 1 || !ok || at != st.index || models.FloorDiv(now, m.window) > at {
		return
	}
	st.count -= min(int64(r.N), st.count)
	if st.count == 0 {
		delete(m.keys, key)
		return
	}
	m.keys[key] = st
}

// tokenBucketRefunds is models.TokenBucket (epoch 0) with the token bucket's
// refunds (see hotlimit.Refunder): a refund gives back the receipt's tokens
// less what refilled since its At, never above the burst.
type tokenBucketRefunds struct {
	burst     int64
	cap, rate *big.Rat
	keys      map[string]*tokenBucketKey
	limit     int
}

type tokenBucketKey struct {
	tokens *big.Rat
	last   int64
}

func newTokenBucketRefunds(limit, burst int, window time.Duration) *tokenBucketRefunds {
	return &tokenBucketRefunds{
		burst: int64(burst), limit: limit,
		cap:  new(big.Rat).SetInt64(int64(burst)),
		rate: big.NewRat(int64(limit), int64(window)),
		keys: map[string]*tokenBucketKey{},
	}
}

// tokens returns key's tokens at t, as a new Rat: a clock behind the key's
// last time refills nothing.
func (m *tokenBucketRefunds) tokens(key string, t int64) *big.Rat {
	k, ok := m.keys[key]
	if !ok {
		return new(big.Rat).Set(m.cap)
	}
	x := new(big.Rat).Set(k.tokens)
	if t > k.last {
		x.Add(x, new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(t-k.last)))
		if x.Cmp(m.cap) > 0 {
			x.Set(m.cap)
		}
	}
	return x
}

// set stores x tokens for key at t.
func (m *tokenBucketRefunds) set(key string, x *big.Rat, t int64) {
	if k, ok := m.keys[key]; ok {
		k.tokens, k.last = x, max(k.last, t)
		return
	}
	m.keys[key] = &tokenBucketKey{tokens: x, last: t}
}

// wait returns the least whole nanoseconds until key holds want at now.
func (m *tokenBucketRefunds) wait(key string, now int64, want *big.Rat) time.Duration {
	x := m.tokens(key, now)
	if x.Cmp(want) >= 0 {
		return 0
	}
	d := int64(0)
	if k, ok := m.keys[key]; ok && k.last > now {
		d = k.last - now
	}
	q := new(big.Rat).Sub(want, x)
	q.Quo(q, m.rate)
	return time.Duration(d + models.CeilRat(q))
}

// Take is models.TokenBucket's Take.
func (m *tokenBucketRefunds) Take(key string, n int, now int64) hotlimit.Decision {
	d := hotlimit.Decision{Limit: m.limit}
	want := new(big.Rat).SetInt64(int64(n))
	switch x := m.tokens(key, now); {
	case n < 0 || int64(n) > m.burst:
		d.RetryAfter = hotlimit.Never
	case n == 0:
		d.Allowed = true
	case x.Cmp(want) >= 0:
		m.set(key, x.Sub(x, want), now)
		d.Allowed = true
	default:
		d.RetryAfter = m.wait(key, now, want)
	}
	d.Remaining = int(models.FloorRat(m.tokens(key, now)))
	d.ResetAfter = m.wait(key, now, m.cap)
	return d
}

// Refund is the token bucket's Refund(key, r) at now.
func (m *tokenBucketRefunds) Refund(key string, r hotlimit.Receipt, now int64) {
	if _, ok := m.keys[key]; !ok || r.N < 1 {
		return
	}
	give := new(big.Rat).SetInt64(min(int64(r.N), m.burst))
	if now > r.At {
		give.Sub(give, new(big.Rat).Mul(m.rate, new(big.Rat).SetInt64(now-r.At)))
	}
	if give.Sign() <= 0 {
		return
	}
	x := m.tokens(key, now)
	x.Add(x, give)
	if x.Cmp(m.cap) > 0 {
		x.Set(m.cap)
	}
	m.set(key, x, now)
}
