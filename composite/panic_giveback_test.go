package composite_test

import (
	"context"
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
