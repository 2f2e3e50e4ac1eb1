package composite_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
)

// hooked is a child that counts the refunds it is given and runs before
// ahead of each, so a test can make anything happen between the child's Take
// and its refund.
type hooked struct {
	hotlimit.Refunder
	before  func()
	refunds atomic.Int64
}

func (h *hooked) Refund(key string, r hotlimit.Receipt) {
	h.refunds.Add(1)
	if h.before != nil {
		h.before()
	}
	h.Refunder.Refund(key, r)
}

// sweeper is what every limiter of the module has.
type sweeper interface {
	Sweep() int
	Len() int
}

// TestRefundRacingASweepOfTheChild forces, for every kind of child, a sweep
// of the child between its Take and the refund that the composite makes when
// a later child denies:
//
//   - clock frozen: the key holds the Take, so the sweep keeps it, and the
//     refund restores the child to a fresh key's capacity;
//   - clock past the key's idle time: the sweep evicts the key, and the late
//     refund gives back nothing and inserts nothing;
//   - the same, with a request of another caller re-inserting the key
//     between the sweep and the refund: the late refund must not give back
//     that request's capacity.
//
// Afterwards the child admits exactly what the sequential model says.
func TestRefundRacingASweepOfTheChild(t *testing.T) {
	const limit, window = 3, time.Second
	for _, k := range kinds {
		for _, race := range []string{"frozen", "idle", "idle+retaken"} {
			t.Run(k.name+"/"+race, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour) + 123)
				child := &hooked{Refunder: k.make(t, limit, window, now.Load)}
				denier := kinds[2].make(t, 1, window, now.Load) // a fixed window of 1
				c, err := composite.New(child, denier)
				require.NoError(t, err)
				require.True(t, denier.Allow("k"), "the denier's one request")
				sw := child.Refunder.(sweeper)

				swept, retaken := -1, false
				child.before = func() {
					if race != "frozen" {
						now.Add(int64(3 * window)) // every kind is idle again
					}
					swept = sw.Sweep()
					if race == "idle+retaken" {
						retaken = child.Refunder.Take("k", 1).Allowed
					}
				}
				d := c.Take("k", 1)
				require.False(t, d.Allowed, "the second child denies")
				require.EqualValues(t, 1, child.refunds.Load(), "the child that admitted is refunded once")

				want := limit // the sequential model: the denied request took nothing
				switch race {
				case "frozen":
					assert.Zero(t, swept, "a key that holds a Take is not idle")
				default:
					assert.Equal(t, 1, swept, "the key was idle: swept")
				}
				if race == "idle+retaken" {
					require.True(t, retaken)
					want = limit - 1 // the other caller's request stays counted
				}
				if race == "idle" {
					assert.Zero(t, sw.Len(), "a refund for a key the child does not hold inserts none")
				}
				assert.Equal(t, want, child.Refunder.Take("k", 0).Remaining, "after the refund")
				passed := 0
				for range 2 * limit {
					if child.Refunder.Allow("k") {
						passed++
					}
				}
				assert.Equal(t, want, passed, "the child admits what the model does")
			})
		}
	}
}

// TestEachAdmittingChildIsRefundedOnce: when the i-th of four children
// denies, each child before it gets exactly one refund, the denier and those
// after it none, and every child holds what it held before the request.
func TestEachAdmittingChildIsRefundedOnce(t *testing.T) {
	clock := func() int64 { return int64(time.Hour) }
	for denying := range 4 {
		t.Run(fmt.Sprintf("denier=%d", denying), func(t *testing.T) {
			children := make([]*hooked, 4)
			limiters := make([]hotlimit.Limiter, 4)
			for i := range children {
				children[i] = &hooked{Refunder: kinds[i].make(t, 5, time.Second, clock)}
				limiters[i] = children[i]
			}
			c, err := composite.New(limiters...)
			require.NoError(t, err)
			// Two requests that every child admits, then the denier is
			// drained to its last 2 and asked for 3.
			require.True(t, c.Take("k", 2).Allowed)
			require.True(t, children[denying].Take("k", 1).Allowed)
			before := make([]int, 4)
			for i, ch := range children {
				before[i] = ch.Take("k", 0).Remaining
			}
			d := c.Take("k", 3)
			require.False(t, d.Allowed)
			for i, ch := range children {
				want := int64(0)
				if i < denying {
					want = 1
				}
				assert.Equal(t, want, ch.refunds.Load(), "child %d refunds", i)
				assert.Equal(t, before[i], ch.Take("k", 0).Remaining, "child %d holds what it held", i)
			}
			assert.Equal(t, 2, d.Remaining, "the denier's Remaining, the least")
		})
	}
}
