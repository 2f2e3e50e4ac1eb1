package composite_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/unlimited"
)

// refundRun plays a random sequence on main, which takes and later refunds
// some of its takes, and on twin, which only ever sees the takes main
// admitted and never refunded: the history main would have had without the
// refunded takes. A refund must never create capacity that was not taken, so
// twin must admit every take main admits, and main never has more Remaining
// than twin.
func refundRun(t *testing.T, r *rand.Rand, now *atomic.Int64, main, twin hotlimit.Refunder, maxN int, window time.Duration) (refunds int) {
	type pending struct {
		key string
		rc  hotlimit.Receipt
		due int
	}
	var queue []pending
	keys := []string{"a", "b"}
	for step := range 150 {
		switch q := r.IntN(10); {
		case q < 3:
			now.Add(r.Int64N(int64(window/4)) / int64(time.Millisecond) * int64(time.Millisecond))
		case q < 4:
			now.Add(r.Int64N(int64(window/100)) + 1) // off the millisecond grid
		}
		// Refunds due now, in any order.
		for i := 0; i < len(queue); i++ {
			if queue[i].due <= step {
				main.Refund(queue[i].key, queue[i].rc)
				refunds++
				queue = append(queue[:i], queue[i+1:]...)
				i--
			}
		}
		key := keys[r.IntN(len(keys))]
		n := 1 + r.IntN(maxN)
		refund := r.IntN(5) < 2
		d, rc := main.TakeReceipt(key, n)
		msg := fmt.Sprintf("step %d key %s n %d refund %t", step, key, n, refund)
		switch {
		case !d.Allowed:
			assert.Zero(t, rc, msg)
		case refund:
			queue = append(queue, pending{key, rc, step + r.IntN(6)}) // 0: at once
		default:
			assert.True(t, twin.Take(key, n).Allowed, "%s: the twin, without the refunded takes, denies what main admits", msg)
		}
		for _, k := range keys {
			assert.LessOrEqual(t, main.Take(k, 0).Remaining, twin.Take(k, 0).Remaining, "%s: key %s: main has more capacity than its twin", msg, k)
		}
		if t.Failed() {
			return refunds
		}
	}
	return refunds
}

// TestRefundNeverCreatesCapacity runs refundRun on every kind of limiter,
// with refunds made at once and up to a few calls later, on a clock that
// moves by milliseconds and by odd nanoseconds.
func TestRefundNeverCreatesCapacity(t *testing.T) {
	seqs := 60
	if testing.Short() {
		seqs = 10
	}
	for ki, k := range kinds {
		for _, cfg := range []struct {
			limit  int
			window time.Duration
		}{{5, time.Second}, {7, 700 * time.Millisecond}, {1, time.Second}} {
			t.Run(fmt.Sprintf("%s/limit=%d/window=%v", k.name, cfg.limit, cfg.window), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ki), uint64(cfg.limit)))
				refunds := 0
				for range seqs {
					var now atomic.Int64
					now.Store(r.Int64N(1e15))
					main, twin := k.make(t, cfg.limit, cfg.window, now.Load), k.make(t, cfg.limit, cfg.window, now.Load)
					refunds += refundRun(t, r, &now, main, twin, min(cfg.limit, 3), cfg.window)
					if t.Failed() {
						return
					}
				}
				assert.Positive(t, refunds)
			})
		}
	}
}

// TestCompositeRefundNeverCreatesCapacity: refundRun on composites of two
// children of every pair of kinds; the composite's receipt holds the earliest
// of its children's times, which must be safe for each.
func TestCompositeRefundNeverCreatesCapacity(t *testing.T) {
	seqs := 20
	if testing.Short() {
		seqs = 4
	}
	for ai, a := range kinds {
		for bi, b := range kinds {
			t.Run(a.name+"+"+b.name, func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(ai), uint64(bi)+100))
				for range seqs {
					var now atomic.Int64
					now.Store(r.Int64N(1e15))
					mk := func() *composite.Limiter {
						c, err := composite.New(a.make(t, 6, time.Second, now.Load), b.make(t, 4, 600*time.Millisecond, now.Load))
						require.NoError(t, err)
						return c
					}
					refundRun(t, r, &now, mk(), mk(), 3, time.Second)
					if t.Failed() {
						return
					}
				}
			})
		}
	}
}

// TestRefundBesideUnlimitedGivesBackAll: an unlimited child counts nothing
// and gives the zero Receipt; its At 0 must not stand for the time of the
// Take, or a refund right after the Take, on a clock past 0, would give back
// nothing of a fixed window's or sliding counter's count (their window of
// time 0 ended long ago) and less than all of anything else's.
func TestRefundBesideUnlimitedGivesBackAll(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(100 * time.Hour))
			u, err := unlimited.New()
			require.NoError(t, err)
			for _, first := range []bool{true, false} {
				key := fmt.Sprint(first)
				children := []hotlimit.Limiter{u, k.make(t, 4, time.Second, now.Load)}
				if !first {
					children[0], children[1] = children[1], children[0]
				}
				c, err := composite.New(children...)
				require.NoError(t, err)
				d, r := c.TakeReceipt(key, 3)
				require.True(t, d.Allowed)
				assert.Equal(t, hotlimit.Receipt{N: 3, At: now.Load()}, r, "unlimited first: %v", first)
				c.Refund(key, r)
				assert.Equal(t, 4, c.Take(key, 0).Remaining, "unlimited first: %v: all given back", first)
			}
		})
	}
}

// uncounting is a child that, while down, admits without counting and gives
// the zero Receipt, as redislimit's failure policies do while Redis is down;
// up, it is its limiter. Refunds always reach the limiter, as a refund
// reaches Redis once it is back.
type uncounting struct {
	hotlimit.Refunder
	down bool
}

func (u *uncounting) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	if u.down {
		return hotlimit.Decision{Allowed: true}, hotlimit.Receipt{}
	}
	return u.Refunder.TakeReceipt(key, n)
}

// TestRefundGivesNothingToAChildThatDidNotCount: a child that admitted
// without counting (its zero Receipt) makes the composite's receipt zero,
// even beside a child that counted, so that a later refund gives its limiter
// nothing it never counted: a limit of 4 that counted 2 before the outage
// has 2 left after the refund of 3 taken during it, not 4.
func TestRefundGivesNothingToAChildThatDidNotCount(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour)) // the limiter's epoch, long before the test, as Redis's time is
			lim := k.make(t, 4, time.Hour, now.Load)
			counting := k.make(t, 10, time.Hour, now.Load)
			now.Store(int64(100 * time.Hour))
			child := &uncounting{Refunder: lim}
			u, err := unlimited.New()
			require.NoError(t, err)
			c, err := composite.New(u, child, counting)
			require.NoError(t, err)
			require.True(t, c.Take("k", 2).Allowed, "counted before the outage")
			child.down = true
			d, r := c.TakeReceipt("k", 3)
			require.True(t, d.Allowed)
			assert.Zero(t, r, "the uncounting child's zero receipt, beside a counting one: no receipt")
			child.down = false
			c.Refund("k", r)
			assert.Equal(t, 2, lim.Take("k", 0).Remaining, "nothing given back that was not counted")
		})
	}
}
