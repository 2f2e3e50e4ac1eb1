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
	"github.com/hotlimit/hotlimit/unlimited"
)

// TestRefundGivesNothingToAChildThatDidNotCountOnAnyClock: a child that
// admitted without counting (its zero Receipt) must get nothing back from the
// composite's refund whatever its clock reads. Time 0 is no safe stand-in for
// "never": on a fake clock that starts at 0, as the examples' do, or on a
// clock of any origin that reads negative, 0 is the time of the Take itself,
// and a limiter built at the Take's reading counts a time before its epoch
// as its epoch. Each case builds the limiter of every kind, lets it count 2
// of its 4, then lets the child admit 3 without counting and refunds the
// composite's receipt: the limiter must still have 2 left, not 4.
func TestRefundGivesNothingToAChildThatDidNotCountOnAnyClock(t *testing.T) {
	for _, start := range []int64{0, -int64(100 * time.Hour), int64(100 * time.Hour)} {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s/clock=%v", k.name, time.Duration(start)), func(t *testing.T) {
				var now atomic.Int64
				now.Store(start) // frozen: the limiters are built at the Take's reading
				lim := k.make(t, 4, time.Hour, now.Load)
				counting := k.make(t, 10, time.Hour, now.Load)
				child := &uncounting{Refunder: lim}
				c, err := composite.New(child, counting)
				require.NoError(t, err)
				require.True(t, c.Take("k", 2).Allowed, "counted before the outage")
				child.down = true
				d, r := c.TakeReceipt("k", 3)
				require.True(t, d.Allowed)
				child.down = false
				c.Refund("k", r)
				assert.Equal(t, 2, lim.Take("k", 0).Remaining, "given back what it never counted: receipt %+v", r)
			})
		}
	}
}

// TestRefundBesideANestedUnlimitedGivesBackAll: a composite of unlimited
// children keeps no state either, so, as a child of another composite, its
// receipt's time (0: none of its children read a clock) must not stand for
// the time of the Take, or a refund right after the Take would give the
// other child back nothing of a fixed window's or sliding counter's count
// and less than all of anything else's.
func TestRefundBesideANestedUnlimitedGivesBackAll(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			lim := k.make(t, 4, time.Second, now.Load)
			now.Store(int64(100 * time.Hour))
			u1, err := unlimited.New()
			require.NoError(t, err)
			u2, err := unlimited.New()
			require.NoError(t, err)
			c, err := composite.New(nested(t, u1, nested(t, u2)), lim)
			require.NoError(t, err)
			d, r := c.TakeReceipt("k", 3)
			require.True(t, d.Allowed)
			assert.Equal(t, hotlimit.Receipt{N: 3, At: now.Load()}, r)
			c.Refund("k", r)
			assert.Equal(t, 4, lim.Take("k", 0).Remaining, "all given back")
		})
	}
}
