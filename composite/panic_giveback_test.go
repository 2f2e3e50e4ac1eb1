package composite_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

// TestPanickingChildGivesBackWhatTheOthersTook: a composite whose second
// child panics in its Take (its clock). The panic reached the caller, but
// what the first child had taken stayed taken: each recovered panic cost
// the key a request it never got. Now the children that took the request
// give it back on the way out and the panic goes on with its own value,
// also when the panicking child sits in a composite nested in the first
// (whose own first child is given back so too).
func TestPanickingChildGivesBackWhatTheOthersTook(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name string
		take func(*composite.Limiter)
	}{
		{"Allow", func(c *composite.Limiter) { c.Allow("k") }},
		{"Take", func(c *composite.Limiter) { c.Take("k", 2) }},
		{"TakeContext", func(c *composite.Limiter) { _, _ = c.TakeContext(ctx, "k", 2) }},
		{"TakeReceiptContext", func(c *composite.Limiter) { _, _, _ = c.TakeReceiptContext(ctx, "k", 2) }},
	}
	eachKindNested(t, func(t *testing.T, k kind, nest bool) {
		for _, call := range calls {
			t.Run("call="+call.name, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour))
				var clock limitertest.PanicClock
				clock.Now.Store(int64(time.Hour))
				first := k.make(t, 10, time.Hour, now.Load)
				var second hotlimit.Refunder = k.make(t, 10, time.Hour, clock.Read)
				third := k.make(t, 10, time.Hour, now.Load)
				counted := []hotlimit.Refunder{first, third}
				if nest {
					firstInner := k.make(t, 10, time.Hour, now.Load)
					inner, err := composite.New(firstInner, second)
					require.NoError(t, err)
					second, counted = inner, append(counted, firstInner)
				}
				c, err := composite.New(first, second, third)
				require.NoError(t, err)

				clock.Arm(true)
				assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { call.take(c) }),
					"the child's panic reaches the caller unchanged")
				clock.Arm(false)

				for i, l := range counted {
					assert.Equal(t, 10, l.Take("k", 0).Remaining, "child %d: nothing is kept of the request that panicked", i)
				}
				assert.Equal(t, 10, c.Take("k", 0).Remaining)
			})
		}
	})
}

// TestPanickingRefundLeavesTheChildrenBeforeItGivenBack: a composite whose
// second child panics in its Refund (a limiter of the caller's own), in
// the give-back of a request that the third child's panic left undecided,
// or that the third denied. The give-back stopped at the second child, so
// the first, with nothing wrong with it, kept a request its caller never
// got. Now the children before a refund that panics are given back all the
// same, and the panic goes on; so too within a nested composite holding the
// second child after a child of its own.
func TestPanickingRefundLeavesTheChildrenBeforeItGivenBack(t *testing.T) {
	for _, denied := range []bool{false, true} {
		t.Run(fmt.Sprintf("denied=%v", denied), func(t *testing.T) {
			eachKindNested(t, func(t *testing.T, k kind, nest bool) {
				var now atomic.Int64
				now.Store(int64(time.Hour))
				var clock limitertest.PanicClock
				clock.Now.Store(int64(time.Hour))
				first := k.make(t, 10, time.Hour, now.Load)
				refunder := &limitertest.PanicRefunder{Refunder: k.make(t, 10, time.Hour, now.Load)}
				var second hotlimit.Refunder = refunder
				thirdLimit := 10
				if denied {
					thirdLimit = 1
				}
				third := k.make(t, thirdLimit, time.Hour, clock.Read)
				given := []hotlimit.Refunder{first} // given back despite the panic
				if nest {
					firstInner := k.make(t, 10, time.Hour, now.Load)
					inner, err := composite.New(firstInner, second)
					require.NoError(t, err)
					second, given = inner, append(given, firstInner)
				}
				c, err := composite.New(first, second, third)
				require.NoError(t, err)
				want := 10
				if denied {
					require.True(t, c.Allow("k"), "third holds 1")
					want = 9
				} else {
					clock.Arm(true)
				}
				refunder.Arm(true)
				assert.Equal(t, limitertest.PanicValue, limitertest.Recovered(func() { c.Take("k", 1) }))
				refunder.Arm(false)
				clock.Arm(false)

				for i, l := range given {
					assert.Equal(t, want, l.Take("k", 0).Remaining, "child %d was given back (denied=%v)", i, denied)
				}
				assert.Equal(t, want-1, refunder.Take("k", 0).Remaining, "the child whose refund panicked keeps it")
			})
		})
	}
}
