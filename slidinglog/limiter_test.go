package slidinglog_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
	"github.com/hotlimit/hotlimit/slidinglog"
)

const ms = int64(time.Millisecond)

// fakeClock is a settable clock in nanoseconds.
type fakeClock struct{ atomic.Int64 }

func (c *fakeClock) setMs(v int64) { c.Store(v * ms) }

func newAt(t *testing.T, limit int, window time.Duration) (*slidinglog.Limiter, *fakeClock) {
	t.Helper()
	clock := new(fakeClock)
	lim, err := slidinglog.New(limit, window, hotlimit.WithClock(clock.Load))
	require.NoError(t, err)
	return lim, clock
}

// answers returns Y or N per Allow call.
func answers(lim *slidinglog.Limiter, key string, calls int) string {
	var b strings.Builder
	for range calls {
		if lim.Allow(key) {
			b.WriteByte('Y')
		} else {
			b.WriteByte('N')
		}
	}
	return b.String()
}

func TestNewRejectsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		limit  int
		window time.Duration
		msg    string
	}{
		{0, time.Second, "limit 0 out of range [1, 65536]"},
		{-3, time.Second, "limit -3 out of range"},
		{slidinglog.MaxLimit + 1, time.Second, "limit 65537 out of range"},
		{1, time.Millisecond - 1, "window 999.999µs out of range [1ms, 8784h0m0s]"},
		{1, 0, "window 0s out of range"},
		{1, -time.Second, "window -1s out of range"},
		{1, slidinglog.MaxWindow + 1, "out of range"},
	} {
		t.Run(fmt.Sprintf("%d/%v", tc.limit, tc.window), func(t *testing.T) {
			lim, err := slidinglog.New(tc.limit, tc.window)
			require.Error(t, err)
			assert.Nil(t, lim)
			assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig))
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	for _, ok := range []struct {
		limit  int
		window time.Duration
	}{{1, slidinglog.MinWindow}, {slidinglog.MaxLimit, slidinglog.MaxWindow}} {
		_, err := slidinglog.New(ok.limit, ok.window)
		assert.NoError(t, err)
	}
}

// TestDemo replays the sliding-log part of the reference scenario: 4 per
// second, a millisecond clock.
func TestDemo(t *testing.T) {
	lim, clock := newAt(t, 4, time.Second)
	clock.setMs(20000)
	assert.Equal(t, "YYYYN", answers(lim, "premium", 5))
	clock.setMs(20900)
	assert.Equal(t, "N", answers(lim, "premium", 1))
	clock.setMs(21000)
	assert.Equal(t, "YYYYN", answers(lim, "premium", 5), "(now − Window, now]: requests at exactly now − Window have left")
	clock.setMs(21001)
	assert.Equal(t, "N", answers(lim, "premium", 1))
}

// TestNoBoundaryBurst: unlike a fixed window, no span of Window holds more
// than Limit, across any boundary.
func TestNoBoundaryBurst(t *testing.T) {
	lim, clock := newAt(t, 3, time.Second)
	clock.setMs(10900)
	assert.Equal(t, "YYY", answers(lim, "k", 3))
	clock.setMs(11050)
	assert.Equal(t, "NNN", answers(lim, "k", 3))
	clock.setMs(11900)
	assert.Equal(t, "YYYN", answers(lim, "k", 4))
}

func TestKeysAreIndependent(t *testing.T) {
	lim, clock := newAt(t, 2, time.Second)
	clock.setMs(5)
	keys := []string{"alice", "bob", "", "a\x00b", "a", "\xff\xfe"}
	for _, k := range keys {
		assert.Equal(t, "YYN", answers(lim, k, 3), "key %q", k)
	}
	assert.Equal(t, len(keys), lim.Len())
}

func TestDecisionFields(t *testing.T) {
	lim, clock := newAt(t, 3, time.Second)
	clock.setMs(1000)
	d := lim.Take("k", 1)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: time.Second}, d)
	clock.setMs(1200)
	d = lim.Take("k", 2)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: time.Second}, d)
	clock.setMs(1500)
	d = lim.Take("k", 1)
	assert.Equal(t, hotlimit.Decision{Limit: 3, Remaining: 0, RetryAfter: 500 * time.Millisecond, ResetAfter: 700 * time.Millisecond}, d)
	d = lim.Take("k", 2) // the 2nd oldest is at 1.2 s
	assert.Equal(t, 700*time.Millisecond, d.RetryAfter)
	d = lim.Take("k", 0)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 0, ResetAfter: 700 * time.Millisecond}, d)
	clock.setMs(2000)
	d = lim.Take("k", 0)
	assert.Equal(t, 1, d.Remaining)
	clock.setMs(2200)
	d = lim.Take("k", 0)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, d)
}

// TestRetryAfterIsExact: a denied request made RetryAfter − 1 ns later is
// still denied, and made RetryAfter later it passes.
func TestRetryAfterIsExact(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			lim, clock := newAt(t, 5, time.Second)
			for i := range 5 {
				clock.Store(int64(i) * 137 * ms)
				require.True(t, lim.Allow("k"))
			}
			clock.Store(700 * ms)
			d := lim.Take("k", n)
			require.False(t, d.Allowed)
			require.Positive(t, d.RetryAfter)
			clock.Add(int64(d.RetryAfter) - 1)
			require.False(t, lim.Take("k", n).Allowed)
			clock.Add(1)
			assert.True(t, lim.Take("k", n).Allowed)
		})
	}
}

func TestBadTakeChangesNothing(t *testing.T) {
	lim, clock := newAt(t, 3, time.Second)
	clock.setMs(1)
	for _, n := range []int{-1, math.MinInt, 4, math.MaxInt} {
		d := lim.Take("k", n)
		assert.Equal(t, hotlimit.Decision{Limit: 3, Remaining: 3, RetryAfter: hotlimit.Never}, d, "n=%d", n)
	}
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, lim.Take("k", 0))
	assert.Zero(t, lim.Len(), "reports never insert a key")
	assert.True(t, lim.Take("k", 3).Allowed)
	assert.Equal(t, 0, lim.Take("k", 4).Remaining)
}

// TestClockSteppingBack: a clock that steps back is no time passing.
func TestClockSteppingBack(t *testing.T) {
	lim, clock := newAt(t, 2, time.Second)
	clock.setMs(5000)
	assert.Equal(t, "YYN", answers(lim, "k", 3))
	clock.setMs(1000) // back: the log stays at 5 s
	assert.Equal(t, "N", answers(lim, "k", 1))
	d := lim.Take("k", 1)
	assert.Equal(t, 5*time.Second, d.RetryAfter, "the caller's clock must reach 6 s")
	clock.setMs(6000)
	assert.Equal(t, "YYN", answers(lim, "k", 3))
}

// TestExtremeClocks: clock readings far beyond the slot range are clamped
// and never panic or wrap.
func TestExtremeClocks(t *testing.T) {
	lim, clock := newAt(t, 2, slidinglog.MaxWindow)
	for _, now := range []int64{-1 << 63, -1 << 62, 0, 1 << 62, 1<<63 - 1} {
		clock.Store(now)
		d := lim.Take(fmt.Sprint(now), 2)
		assert.True(t, d.Allowed, "now=%d", now)
		d = lim.Take(fmt.Sprint(now), 1)
		assert.False(t, d.Allowed)
		assert.Positive(t, d.RetryAfter)
	}
}

func TestZeroAllocs(t *testing.T) {
	lim, clock := newAt(t, 1000, time.Second)
	lim.Allow("k")
	allocs := testing.AllocsPerRun(1000, func() {
		clock.Add(ms)
		lim.Allow("k")
		lim.Take("k", 2)
		lim.Take("k", 0)
	})
	assert.Zero(t, allocs)
}

func TestMaxLimit(t *testing.T) {
	lim, clock := newAt(t, slidinglog.MaxLimit, time.Millisecond)
	clock.Store(1)
	require.True(t, lim.Take("k", slidinglog.MaxLimit).Allowed)
	require.False(t, lim.Allow("k"))
	clock.Add(ms)
	assert.True(t, lim.Allow("k"))
	assert.Equal(t, slidinglog.MaxLimit-1, lim.Take("k", 0).Remaining)
}

// TestWaitsPastTheSlotRangeAreNever: a request logged less than a Window
// before packed.MaxStamp, the latest time a slot holds and to which later
// clock readings are clamped, never leaves the window, so a request it
// denies gets RetryAfter Never, and the key's ResetAfter is Never; a wait
// that ends at MaxStamp itself is still exact.
func TestWaitsPastTheSlotRangeAreNever(t *testing.T) {
	sec := int64(time.Second)
	lim, clock := newAt(t, 1, time.Second)

	clock.Store(packed.MaxStamp - sec/2)
	require.True(t, lim.Allow("k"))
	d := lim.Take("k", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
	assert.Equal(t, hotlimit.Never, d.ResetAfter)
	assert.Equal(t, hotlimit.Never, lim.Take("k", 0).ResetAfter)
	clock.Store(math.MaxInt64) // as late as a clock reads
	assert.False(t, lim.Allow("k"), "never leaves the window")

	clock.Store(packed.MaxStamp - sec)
	require.True(t, lim.Allow("j"))
	d = lim.Take("j", 1)
	require.False(t, d.Allowed)
	assert.Equal(t, time.Second, d.RetryAfter, "leaves the window at MaxStamp")
	assert.Equal(t, time.Second, d.ResetAfter)
	clock.Store(packed.MaxStamp - 1)
	assert.False(t, lim.Allow("j"))
	clock.Store(packed.MaxStamp)
	assert.True(t, lim.Allow("j"))
}

// TestWaitsBeforeTheSlotRangeAreExact: a clock read before the earliest
// time the limiter reads (packed.MinStamp + Window, to which such readings
// are clamped) stands still until it gets there, so RetryAfter and
// ResetAfter count from the reading itself, not from the clamped time: the
// same request made RetryAfter − 1 ns later is still denied, RetryAfter
// later it passes.
func TestWaitsBeforeTheSlotRangeAreExact(t *testing.T) {
	for _, start := range []int64{math.MinInt64, packed.MinStamp - 1, packed.MinStamp + int64(time.Second) - 1} {
		lim, clock := newAt(t, 1, time.Second)
		clock.Store(start)
		require.True(t, lim.Allow("k"))
		d := lim.Take("k", 1)
		require.False(t, d.Allowed)
		want := time.Duration(packed.MinStamp + 2*int64(time.Second) - start)
		assert.Equal(t, want, d.RetryAfter, "start %d", start)
		assert.Equal(t, want, d.ResetAfter, "start %d", start)
		assert.Equal(t, want, lim.Take("k", 0).ResetAfter, "start %d", start)
		clock.Store(start + int64(d.RetryAfter) - 1)
		assert.False(t, lim.Allow("k"), "start %d: RetryAfter − 1 ns", start)
		clock.Store(start + int64(d.RetryAfter))
		assert.True(t, lim.Allow("k"), "start %d: RetryAfter", start)
	}
}

// TestWaitsPastTheClockRangeAreNever: a limiter created with its clock
// less than packed.MaxStamp (2^61 − 2 ns) before math.MaxInt64, the latest
// a clock reads, stops there: a request logged less than a Window before the clock's end never
// leaves the window, so a request it denies gets RetryAfter Never, and the
// key's ResetAfter is Never, not a wait the clock can never get through. A
// wait that ends at math.MaxInt64 itself is still exact.
func TestWaitsPastTheClockRangeAreNever(t *testing.T) {
	sec := int64(time.Second)
	for _, epoch := range []int64{math.MaxInt64, math.MaxInt64 - sec/2, math.MaxInt64 - packed.MaxStamp + 1} {
		clock := new(fakeClock)
		clock.Store(epoch)
		lim, err := slidinglog.New(1, time.Second, hotlimit.WithClock(clock.Load))
		require.NoError(t, err)

		clock.Store(math.MaxInt64 - sec/2)
		require.True(t, lim.Allow("k"), "epoch %d", epoch)
		d := lim.Take("k", 1)
		require.False(t, d.Allowed, "epoch %d", epoch)
		assert.Equal(t, hotlimit.Never, d.RetryAfter, "epoch %d", epoch)
		assert.Equal(t, hotlimit.Never, d.ResetAfter, "epoch %d", epoch)
		assert.Equal(t, hotlimit.Never, lim.Take("k", 0).ResetAfter, "epoch %d", epoch)
		clock.Store(math.MaxInt64) // as late as a clock reads
		assert.False(t, lim.Allow("k"), "epoch %d: never leaves the window", epoch)
		err = hotlimit.Wait(context.Background(), lim, "k", hotlimit.WithSleep(func(context.Context, time.Duration) error {
			t.Fatalf("epoch %d: Wait slept for a request that never passes", epoch)
			return nil
		}))
		assert.ErrorIs(t, err, hotlimit.ErrNeverPasses, "epoch %d", epoch)

		if epoch > math.MaxInt64-sec {
			continue // the clock's range ends less than a Window after New
		}
		clock.Store(math.MaxInt64 - sec)
		require.True(t, lim.Allow("j"), "epoch %d", epoch)
		d = lim.Take("j", 1)
		require.False(t, d.Allowed, "epoch %d", epoch)
		assert.Equal(t, time.Second, d.RetryAfter, "epoch %d: leaves the window at math.MaxInt64", epoch)
		assert.Equal(t, time.Second, d.ResetAfter, "epoch %d", epoch)
		clock.Store(math.MaxInt64 - 1)
		assert.False(t, lim.Allow("j"), "epoch %d", epoch)
		clock.Store(math.MaxInt64)
		assert.True(t, lim.Allow("j"), "epoch %d", epoch)
	}
}
