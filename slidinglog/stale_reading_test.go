package slidinglog_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestStaleDenialIsDecidedAgainOnALaterReading forces a Take that reads
// the clock, then stalls while the clock moves on and another call logs a
// request at the later time, and only then reads the ring: the ring holds a
// request newer than the Take's reading. Denied at its reading, the Take
// would count RetryAfter and ResetAfter from a time before that request was
// made, too long by the stall; the sequential model puts the Take after the
// other call, at a reading no earlier than its request. So the Decision,
// every field of it, must be the model's at the clock after the stall: at
// 2 per second with requests at 0 s and 0.6 s, a Take read at 1 s that
// finds a request logged at 1.3 s waits 300 ms for the 0.6 s one to leave,
// and 1 s for a full quota, not 600 ms and 1.3 s; and if the clock has
// reached 1.7 s by then, where the 0.6 s request has left, it passes.
func TestStaleDenialIsDecidedAgainOnALaterReading(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for _, tc := range []struct {
		name         string
		limit, n     int
		before       []float64 // requests logged one at a time, at these times
		logged, then float64   // the other call's time, and the clock after it
	}{
		{"one", 2, 1, []float64{0, 0.6}, 1.3, 1.3},
		{"two", 3, 2, []float64{0, 0.5, 0.6}, 1.3, 1.3},
		{"passes later", 2, 1, []float64{0, 0.6}, 1.3, 1.7},
		{"two pass later", 3, 2, []float64{0, 0.5, 0.6}, 1.3, 1.7},
	} {
		t.Run(fmt.Sprintf("%s/limit=%d/n=%d", tc.name, tc.limit, tc.n), func(t *testing.T) {
			const base = int64(100 * time.Second)
			var clock limitertest.HookClock
			clock.Now.Store(base)
			lim, err := slidinglog.New(tc.limit, time.Second, hotlimit.WithClock(clock.Read))
			require.NoError(t, err)
			m := models.NewSlidingLog(tc.limit, time.Second)
			for _, at := range tc.before {
				clock.Now.Store(base + sec(at))
				require.True(t, lim.Allow("k"))
				require.True(t, m.Take("k", 1, base+sec(at)).Allowed)
			}

			clock.Now.Store(base + sec(1))
			logged := false
			clock.Hook = func() {
				// The Take has its reading, 1 s: another call logs at 1.3 s.
				clock.Now.Store(base + sec(tc.logged))
				logged = lim.Allow("k")
				require.True(t, m.Take("k", 1, base+sec(tc.logged)).Allowed)
				clock.Now.Store(base + sec(tc.then))
			}
			d := lim.Take("k", tc.n)
			require.True(t, logged, "the other call logged its request inside the Take")
			want := m.Take("k", tc.n, base+sec(tc.then))
			assert.Equal(t, want, d, "the model's Decision after the other call, at %v s", tc.then)
		})
	}
}

// TestStaleDenialReadsAgainOncePerRing forces, after a Take's second
// reading (the one a denial on a stale reading makes, see
// TestStaleDenialIsDecidedAgainOnALaterReading), yet another request
// logged before the Take decides: at 2 per second, requests at 0 s and
// 0.6 s, a Take read at 1 s finds one logged at 1.3 s and reads the clock
// again, at 1.7 s, where the 0.6 s one has left; but before it reads the
// ring again, another request is logged. Logged at 1.7 s, its second
// reading, that request is no newer than the reading: the Take is denied
// there, waiting 600 ms for the 1.3 s one. Logged later (at 2 s), it makes
// that ring stale too, and the Take reads the clock a third time. Either way the Decision is the model's after every other
// request, at the Take's last reading.
func TestStaleDenialReadsAgainOncePerRing(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for _, last := range []float64{1.7, 2} {
		t.Run(fmt.Sprintf("logged at %v s", last), func(t *testing.T) {
			const base = int64(100 * time.Second)
			var clock limitertest.HookClock
			clock.Now.Store(base)
			lim, err := slidinglog.New(2, time.Second, hotlimit.WithClock(clock.Read))
			require.NoError(t, err)
			m := models.NewSlidingLog(2, time.Second)
			logAt := func(at float64) {
				clock.Now.Store(base + sec(at))
				require.True(t, lim.Allow("k"), "a request at %v s", at)
				require.True(t, m.Take("k", 1, base+sec(at)).Allowed)
			}
			logAt(0)
			logAt(0.6)

			clock.Now.Store(base + sec(1))
			readings := 0
			var hook func()
			hook = func() {
				// The Take's readings: the first gets 1 s, the second 1.7 s;
				// after each, another request is logged.
				readings++
				switch readings {
				case 1:
					logAt(1.3)
					clock.Now.Store(base + sec(1.7))
					clock.Hook = hook
				case 2:
					logAt(last) // the clock stays there
					clock.Hook = hook
				}
			}
			clock.Hook = hook
			d := lim.Take("k", 1)
			clock.Hook = nil
			want := 2
			if last > 1.7 {
				want = 3
			}
			assert.Equal(t, want, readings, "the Take's clock readings")
			final := base + sec(max(1.7, last))
			assert.Equal(t, m.Take("k", 1, final), d, "the model's Decision after the other requests, at the Take's last reading")
		})
	}
}

// TestStaleDenialSeesTheHeadMoveUnderAnEqualSlot: a Take denied on a stale
// reading reads the clock again, and decides on that reading only if it
// meets the very ring it judged. Two requests logged at one time in one
// round of the ring leave two slots with equal stamps, so the slot under
// the head can read the same after a request moved the head on: at 3 per
// second with requests at 0 s and two at 0.5 s, a Take read at 1.1 s finds
// one logged at 1.2 s, and at its second reading, 1.25 s, another is logged
// (over the first 0.5 s one: at 1.55 s, when it has left the window, or at
// 1.3 s, refunded), which puts the second 0.5 s one under the head. That
// ring holds a request newer than the second reading too: the Take reads
// the clock a third time, and decides as the model after every other
// request, not at 1.25 s.
func TestStaleDenialSeesTheHeadMoveUnderAnEqualSlot(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	for _, tc := range []struct {
		name   string
		n      int
		refund bool    // refund the first 0.5 s request before the last one is logged
		last   float64 // the request logged at the Take's second reading
	}{
		{"left the window/n=2", 2, false, 1.55}, // denied on the 1.2 s request, the 2nd oldest
		{"refunded/n=1", 1, true, 1.3},          // denied on the second 0.5 s request
	} {
		t.Run(tc.name, func(t *testing.T) {
			const base = int64(100 * time.Second)
			var clock limitertest.HookClock
			clock.Now.Store(base)
			lim, err := slidinglog.New(3, time.Second, hotlimit.WithClock(clock.Read))
			require.NoError(t, err)
			m := models.NewSlidingLog(3, time.Second)
			var rc hotlimit.Receipt
			logAt := func(at float64) {
				clock.Now.Store(base + sec(at))
				d, r := lim.TakeReceipt("k", 1)
				require.True(t, d.Allowed, "a request at %v s", at)
				require.True(t, m.Take("k", 1, base+sec(at)).Allowed)
				if rc.N == 0 && at == 0.5 {
					rc = r // the first 0.5 s request's
				}
			}
			logAt(0)
			logAt(0.5)
			logAt(0.5) // same time, same round: the same stamp in the next slot

			clock.Now.Store(base + sec(1.1))
			readings := 0
			var hook func()
			hook = func() {
				readings++
				switch readings {
				case 1: // the Take's first reading, 1.1 s
					logAt(1.2)
					clock.Now.Store(base + sec(1.25))
				case 2: // its second, 1.25 s
					if tc.refund {
						clock.Now.Store(base + sec(tc.last))
						lim.Refund("k", rc)
						m.Refund("k", rc, base+sec(tc.last))
					}
					logAt(tc.last) // the clock stays there
				}
				clock.Hook = hook
			}
			clock.Hook = hook
			d := lim.Take("k", tc.n)
			clock.Hook = nil
			assert.Equal(t, 3, readings, "the Take's clock readings")
			assert.False(t, d.Allowed)
			assert.Equal(t, m.Take("k", tc.n, base+sec(tc.last)), d, "the model's Decision after the other requests, at %v s", tc.last)
		})
	}
}

// TestStaleDenialOnARevivedKeyReadsAgain: a Take denied on a stale reading
// remembers the ring it judged, to decide there on its next reading; a
// Sweep that evicts the key meanwhile sends it to the key's fresh cell,
// whose ring can read as the one it remembers (the same head, over the same
// unclaimed slot), but holds other requests. At 3 per second, a Take(k, 3)
// read at 0 s finds a request logged at 0.1 s; at its second reading, 0.1
// s, the clock moves to 1.2 s and a Sweep evicts the key; at the reading
// it takes for the fresh cell, 1.2 s, a request is logged there at 1.3 s.
// That ring holds a request newer than the reading: the Take reads the
// clock again, and is denied as the model after the other requests, at
// 1.3 s, waiting 1 s, not 1.1 s.
func TestStaleDenialOnARevivedKeyReadsAgain(t *testing.T) {
	sec := func(s float64) int64 { return int64(s * float64(time.Second)) }
	const base = int64(100 * time.Second)
	var clock limitertest.HookClock
	clock.Now.Store(base)
	lim, err := slidinglog.New(3, time.Second, hotlimit.WithClock(clock.Read))
	require.NoError(t, err)
	m := models.NewSlidingLog(3, time.Second)
	logAt := func(at float64) {
		clock.Now.Store(base + sec(at))
		require.True(t, lim.Allow("k"), "a request at %v s", at)
		require.True(t, m.Take("k", 1, base+sec(at)).Allowed)
	}
	readings, swept := 0, 0
	var hook func()
	hook = func() {
		readings++
		switch readings {
		case 1: // the Take's first reading, 0 s: a fresh cell
			logAt(0.1)
		case 2: // its second, 0.1 s
			clock.Now.Store(base + sec(1.2))
			swept = lim.Sweep()
			m.Sweep(base + sec(1.2))
		case 3: // on the key's fresh cell, 1.2 s
			logAt(1.3) // the clock stays there
		}
		clock.Hook = hook
	}
	clock.Hook = hook
	d := lim.Take("k", 3)
	clock.Hook = nil
	require.Equal(t, 1, swept, "the Sweep evicted the key inside the Take")
	assert.Equal(t, 4, readings, "the Take's clock readings")
	want := m.Take("k", 3, base+sec(1.3))
	require.False(t, want.Allowed)
	assert.Equal(t, time.Second, want.RetryAfter)
	assert.Equal(t, want, d, "the model's Decision after the other requests, at 1.3 s")
}

// TestFrozenClockStaleDenialEnds: under a frozen clock, a request that
// takes the place of a refunded one logged at the clock's time is logged
// 1 ns after it, so the key's newest request stays ahead of every reading.
// A Take denied there reads the clock again, meets the same ring, and
// decides on that reading: two readings, not one more per ring read. (The
// clock moves on after ten readings, so that a Take that kept reading it
// ends and fails here rather than hang.)
func TestFrozenClockStaleDenialEnds(t *testing.T) {
	const frozen = int64(42 * time.Second)
	readings := 0
	clock := func() int64 {
		readings++
		if readings > 10 {
			return frozen + int64(time.Hour)
		}
		return frozen
	}
	lim, err := slidinglog.New(1, time.Second, hotlimit.WithClock(clock))
	require.NoError(t, err)
	m := models.NewSlidingLog(1, time.Second)
	d, rc := lim.TakeReceipt("k", 1)
	require.True(t, d.Allowed)
	require.True(t, m.Take("k", 1, frozen).Allowed)
	lim.Refund("k", rc)
	m.Refund("k", rc, frozen)
	require.True(t, lim.Allow("k"), "the refunded request's place")
	require.True(t, m.Take("k", 1, frozen).Allowed) // logged at frozen + 1 ns
	newest, _ := m.Newest("k")
	require.Equal(t, frozen+1, newest)

	readings = 0
	d = lim.Take("k", 1)
	assert.Equal(t, 2, readings, "the Take's clock readings")
	want := m.Take("k", 1, frozen)
	require.Equal(t, time.Second+time.Nanosecond, want.RetryAfter)
	assert.Equal(t, want, d)
}
