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

// movesClock is a child that moves the clock by step after each of its
// takes, as the time a real clock reads passes between the children a
// composite asks in turn.
type movesClock struct {
	hotlimit.Refunder
	now  *atomic.Int64
	step time.Duration
}

func (m *movesClock) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r := m.Refunder.TakeReceipt(key, n)
	m.now.Add(int64(m.step))
	return d, r
}

// TestReceiptTimeIsTheEarliestOnAMovingClock: the clock passes a window's
// end between the composite's two children, so the first, a fixed window,
// counts the request in the window that ends and the second in the next
// one. The receipt holds the earlier time, the first child's: its refund
// then finds the first child's window ended and gives it nothing back. A
// later time would name the first child's current window, whose count holds
// other requests, not this one, and its refund would let that window pass
// more than its limit.
func TestReceiptTimeIsTheEarliestOnAMovingClock(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour) - 1)                     // the last nanosecond of a window
	first := kinds[2].make(t, 2, time.Second, now.Load) // a fixed window
	second := kinds[0].make(t, 10, time.Second, now.Load)
	c, err := composite.New(&movesClock{Refunder: first, now: &now, step: 1}, second)
	require.NoError(t, err)
	taken := now.Load()
	d, r := c.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	require.Equal(t, int64(time.Hour), now.Load(), "the next window began between the children")
	assert.Equal(t, hotlimit.Receipt{N: 1, At: taken}, r, "the first child's time, the earliest")

	require.True(t, first.Take("k", 2).Allowed, "the first child's new window, full")
	c.Refund("k", r)
	assert.False(t, first.Allow("k"), "the refund gave nothing back to a window the request never counted in")
}
