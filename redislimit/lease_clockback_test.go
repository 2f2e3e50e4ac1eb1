package redislimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
)

// steppedClock is a clock that reads now, except that back, when set,
// is subtracted from the reading after the next one: a clock that steps
// back between two readings of one call.
type steppedClock struct {
	now   atomic.Int64
	back  atomic.Int64
	reads atomic.Int64 // readings left before the step back, when back is set
}

func (c *steppedClock) read() int64 {
	if c.back.Load() != 0 && c.reads.Add(-1) == -1 {
		return c.now.Load() - c.back.Swap(0)
	}
	return c.now.Load()
}

// stepBackAfter makes the clock read d behind after k more readings, once.
func (c *steppedClock) stepBackAfter(k int64, d time.Duration) {
	c.reads.Store(k)
	c.back.Store(int64(d))
}

// TestFixedWindowLeaseClockBackBetweenReadings: a fixed window's lease ends
// with the window Redis counted it in, even when the clock steps back
// between the leasing call's readings (the one its expiry counts from, and
// the one sent to Redis), into the window before the key's: Redis counts
// the request and the lease in the key's window, so the lease must not be
// spent in the next one, where the instances admit exactly the limit.
func TestFixedWindowLeaseClockBackBetweenReadings(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	clock := &steppedClock{}
	clock.now.Store(int64(10*time.Second + 900*time.Millisecond)) // window 10
	clocked := hotlimit.WithClock(clock.read)
	leased := newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(5, time.Hour), redislimit.WithBatch(0, 0))
	other := newExact(t, newClient(t, srv), c, clocked)

	require.True(t, take(t, other, "k", 1).Allowed, "the key counts in window 10")
	// The leasing call reads 10.9 s for its expiry, then 9.9 s for Redis:
	// window 9, behind the key's, so Redis counts it in window 10.
	clock.stepBackAfter(1, time.Second)
	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased, in window 10")
	require.Zero(t, clock.back.Load(), "the clock stepped back within the call")
	assert.Equal(t, c.Limit-7, take(t, other, "k", 0).Remaining, "window 10 counts the request and the lease")

	clock.now.Store(int64(11*time.Second + 500*time.Millisecond)) // window 11
	passed := 0
	for range 2 * c.Limit {
		if take(t, leased, "k", 1).Allowed {
			passed++
		}
		if take(t, other, "k", 1).Allowed {
			passed++
		}
	}
	assert.Equal(t, c.Limit, passed, "window 11 admits exactly its limit: no request of window 10's lease")
}

// TestFixedWindowLeaseResetAfterClockBack: a request spent from a fixed
// window's lease reports as ResetAfter the time left in the window Redis
// counted the lease in, even when the clock stepped back between the
// leasing call's readings.
func TestFixedWindowLeaseResetAfterClockBack(t *testing.T) {
	srv := redistest.Start(t)
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	clock := &steppedClock{}
	clock.now.Store(int64(10*time.Second + 900*time.Millisecond)) // window 10
	clocked := hotlimit.WithClock(clock.read)
	leased := newExact(t, newClient(t, srv), c, clocked, redislimit.WithLease(5, time.Hour), redislimit.WithBatch(0, 0))
	other := newExact(t, newClient(t, srv), c, clocked)

	require.True(t, take(t, other, "k", 1).Allowed, "the key counts in window 10")
	clock.stepBackAfter(1, time.Second) // Redis reads 9.9 s: window 10 counts the lease
	require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased, in window 10")
	d := take(t, leased, "k", 1)
	require.True(t, d.Allowed, "from the lease")
	assert.Equal(t, 100*time.Millisecond, d.ResetAfter, "window 10 ends at 11 s")
}

// TestLeaseResetAfterClockStepMidCall: a request spent from a lease
// reports as ResetAfter the time until the key is full as Redis counts it
// (what a report from another instance says at the same reading), for
// every algorithm that leases, when the caller's clock stepped back or
// forward between the leasing call's readings (the one the lease counts
// from, and the one sent to Redis).
func TestLeaseResetAfterClockStepMidCall(t *testing.T) {
	srv := redistest.Start(t)
	for _, a := range leasing {
		for _, step := range []time.Duration{200 * time.Millisecond, -300 * time.Millisecond} {
			t.Run(fmt.Sprintf("%v/%v", a, -step), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second}
				clock := &steppedClock{}
				clock.now.Store(int64(10*time.Second + 900*time.Millisecond))
				clocked := hotlimit.WithClock(clock.read)
				prefix := redislimit.WithPrefix(fmt.Sprintf("step%v%d:", a, step))
				leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(5, time.Hour), redislimit.WithBatch(0, 0))
				other := newExact(t, newClient(t, srv), c, clocked, prefix)

				require.True(t, take(t, other, "k", 1).Allowed)
				clock.stepBackAfter(1, step)
				require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
				require.Zero(t, clock.back.Load(), "the clock stepped within the call")
				d := take(t, leased, "k", 1)
				require.True(t, d.Allowed, "from the lease")
				assert.Equal(t, take(t, other, "k", 0).ResetAfter, d.ResetAfter, "the key's reset as Redis counts it")
			})
		}
	}
}

// TestLeaseTTLClockBackMidCall: a lease ends ttl after the script's
// reading, as WithLease says (a leased request passes at most ttl after
// Redis took it), for every algorithm that leases, even when the caller's
// clock stepped back between the leasing call's readings: a report on the
// leasing instance counts the lease until then, and from then on gives its
// leftovers back to Redis, whose Remaining alone it reports.
func TestLeaseTTLClockBackMidCall(t *testing.T) {
	srv := redistest.Start(t)
	const size, ttl, back = 5, 100 * time.Millisecond, 200 * time.Millisecond
	for _, a := range leasing {
		t.Run(a.String(), func(t *testing.T) {
			c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second}
			clock := &steppedClock{}
			first := int64(10*time.Second + 900*time.Millisecond) // window 10
			clock.now.Store(first)
			clocked := hotlimit.WithClock(clock.read)
			prefix := redislimit.WithPrefix("ttl" + a.String() + ":")
			leased := newExact(t, newClient(t, srv), c, clocked, prefix, redislimit.WithLease(size, ttl), redislimit.WithBatch(0, 0))
			other := newExact(t, newClient(t, srv), c, clocked, prefix)

			clock.stepBackAfter(1, back) // Redis reads 10.7 s, in window 10 still
			require.True(t, take(t, leased, "k", 1).Allowed, "1 taken, 5 leased")
			require.Zero(t, clock.back.Load(), "the clock stepped back within the call")
			taken := first - int64(back)

			clock.now.Store(taken + int64(ttl) - 1)
			assert.Equal(t, take(t, other, "k", 0).Remaining+size, take(t, leased, "k", 0).Remaining, "live until ttl after Redis took it")
			clock.now.Store(taken + int64(ttl))
			d := take(t, leased, "k", 0) // a live lease would count on top of Redis
			assert.Equal(t, take(t, other, "k", 0).Remaining, d.Remaining, "ended ttl after Redis took it, its leftovers back in Redis")
		})
	}
}
