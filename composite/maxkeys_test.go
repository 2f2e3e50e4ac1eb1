package composite_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestKeyCapOfOneChildSpendsNoneOfAnother: a child whose key cap
// (hotlimit.WithMaxKeys) is full of keys in use turns a new key away; the
// composite denies it like any denial, with a wait that is neither 0 nor
// Never, and the child before it, which admitted the request first, gets
// it back: the new key keeps its full quota there, so that when the capped
// child has room again every request the quota holds passes.
func TestKeyCapOfOneChildSpendsNoneOfAnother(t *testing.T) {
	capped := map[string]func(clock hotlimit.Clock) hotlimit.Limiter{
		"tokenbucket": func(c hotlimit.Clock) hotlimit.Limiter {
			l, err := tokenbucket.New(3, time.Hour, hotlimit.WithClock(c), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			return l
		},
		"gcra": func(c hotlimit.Clock) hotlimit.Limiter {
			l, err := gcra.New(3, time.Hour, hotlimit.WithClock(c), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			return l
		},
		"fixedwindow": func(c hotlimit.Clock) hotlimit.Limiter {
			l, err := fixedwindow.New(3, time.Hour, hotlimit.WithClock(c), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			return l
		},
		"slidingcounter": func(c hotlimit.Clock) hotlimit.Limiter {
			l, err := slidingcounter.New(3, time.Hour, hotlimit.WithClock(c), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			return l
		},
		"slidinglog": func(c hotlimit.Clock) hotlimit.Limiter {
			l, err := slidinglog.New(3, time.Hour, hotlimit.WithClock(c), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			return l
		},
	}
	for name, mk := range capped {
		for _, first := range kinds {
			t.Run(first.name+"+"+name, func(t *testing.T) {
				var now atomic.Int64
				now.Store(int64(time.Hour))
				quota := first.make(t, 4, time.Hour, now.Load)
				full := mk(now.Load)
				c, err := composite.New(quota, full)
				require.NoError(t, err)
				require.True(t, c.Allow("x"), "the capped child's one key, in use")
				for range 3 {
					d := c.Take("y", 2)
					require.False(t, d.Allowed, "no room for y in the capped child")
					assert.Positive(t, d.RetryAfter)
					assert.NotEqual(t, hotlimit.Never, d.RetryAfter)
				}
				assert.Equal(t, 4, quota.Take("y", 0).Remaining, "y's quota: the cap's denials took none of it")
				assert.True(t, quota.Take("y", 4).Allowed, "every request y's quota holds passes it")
			})
		}
	}
}
