package slidinglog_test

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// A clock that steps back leaves the newest logged time ahead of the
// reading, and a Take logs there: its receipt must carry the logged time,
// or a refund finds the reading out of the window and gives nothing back.
func TestReceiptAtIsTheLoggedTime(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(10 * time.Millisecond))
	l, err := slidinglog.New(2, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, l.Allow("k"))

	now.Store(0) // back by ten windows: the next request is logged at 10 ms
	d, r := l.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	assert.Equal(t, int64(10*time.Millisecond), r.At, "the logged time, not the reading")
	require.False(t, l.Allow("k"), "the log is full")

	l.Refund("k", r)
	assert.True(t, l.Allow("k"), "the refund gave the request back")
}

// A Take with n > 1 can spend claims with no other request on its key, when
// a Refund read a later clock than the Take: racing it, or run before the
// clock stepped back. The refund finds an older entry already out of its
// window and marks a newer one; the Take, judging at its earlier reading,
// sees the head's entry and the n-th claimable and starts claiming, then
// meets the entry between them still in the window. It is denied with
// RetryAfter 1 ns, and its first claim stays logged.
func TestTakeAfterALaterRefundSpendsClaims(t *testing.T) {
	ms := func(m int64) int64 { return m * int64(time.Millisecond) }
	for _, racing := range []bool{true, false} {
		t.Run(map[bool]string{true: "racing", false: "step back"}[racing], func(t *testing.T) {
			var now atomic.Int64
			var hook func() // run by the next clock read, before it returns
			clock := func() int64 {
				if h := hook; h != nil {
					hook = nil
					h()
				}
				return now.Load()
			}
			l, err := slidinglog.New(3, 10*time.Millisecond, hotlimit.WithClock(clock))
			require.NoError(t, err)
			now.Store(ms(0))
			require.True(t, l.Allow("k"))
			now.Store(ms(5))
			require.True(t, l.Allow("k"))
			now.Store(ms(12))
			d, r := l.TakeReceipt("k", 1)
			require.True(t, d.Allowed)

			// The refund reads 16 ms: the entry at 5 ms has left its window,
			// so it marks the one at 12 ms. The Take reads 12 ms.
			refund := func() {
				now.Store(ms(16))
				l.Refund("k", r)
				now.Store(ms(12))
			}
			if racing {
				hook = refund // between the Take's clock read and its claims
			} else {
				refund()
			}
			d = l.Take("k", 3)
			require.Nil(t, hook, "the refund ran")
			assert.False(t, d.Allowed)
			assert.Equal(t, time.Nanosecond, d.RetryAfter)

			// The claim it made stays: at 16 ms the entries are 12 ms (the
			// Take's spent claim, counted), 5 ms (expired) and 12 ms
			// (refunded).
			now.Store(ms(16))
			assert.Equal(t, 2, l.Take("k", 0).Remaining)
		})
	}
}

// A claim over a refunded entry logged at or after its own time is logged
// 1 ns after it, up to packed.MaxStamp after the epoch: there it saturates,
// and the claim is logged at MaxStamp itself. Entries at MaxStamp never
// leave the window, so the key then admits only what refunds give back.
func TestBumpSaturatesAtMaxStamp(t *testing.T) {
	var now atomic.Int64 // 0 at New: the epoch
	l, err := slidinglog.New(1, time.Millisecond, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	now.Store(math.MaxInt64)
	for range 3 {
		d, r := l.TakeReceipt("k", 1)
		require.True(t, d.Allowed)
		assert.Equal(t, int64(packed.MaxStamp), r.At, "clamped, then saturated")
		require.False(t, l.Allow("k"))
		l.Refund("k", r)
	}
}

// TestRefundRacingASweepGivesNothingToTheFreshCell forces a sweep between a
// Refund's read of the key's cell and its marks: the refund read the clock
// while its request was still in the window, then stalled while the clock
// moved on, a Sweep evicted the key (every request expired) and new requests
// filled the key's fresh cell. The refund then meets the tombstone and gives
// nothing back: not to the dead cell, and above all not to the fresh one,
// whose requests it never took, so the fresh cell stays full.
func TestRefundRacingASweepGivesNothingToTheFreshCell(t *testing.T) {
	ms := func(m int64) int64 { return m * int64(time.Millisecond) }
	const limit = 3
	var now atomic.Int64
	var hook func() // run by the next clock read, after it read the time
	clock := func() int64 {
		v := now.Load()
		if h := hook; h != nil {
			hook = nil
			h()
		}
		return v
	}
	l, err := slidinglog.New(limit, 10*time.Millisecond, hotlimit.WithClock(clock))
	require.NoError(t, err)
	d, r := l.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	now.Store(ms(1))
	require.True(t, l.Allow("k"))
	now.Store(ms(2))
	require.True(t, l.Allow("k"))

	now.Store(ms(5)) // the refund reads 5 ms: r's request, at 0, still counts
	fresh := 0
	hook = func() {
		now.Store(ms(15)) // every request expired
		require.Equal(t, 1, l.Sweep())
		for range limit + 1 {
			if l.Allow("k") {
				fresh++
			}
		}
	}
	l.Refund("k", r)
	require.Nil(t, hook, "the sweep ran between the refund's read and its marks")
	require.Equal(t, limit, fresh, "the fresh cell took the limit")
	assert.False(t, l.Allow("k"), "the refund gave nothing to the fresh cell")
	assert.Equal(t, 0, l.Take("k", 0).Remaining)
}
