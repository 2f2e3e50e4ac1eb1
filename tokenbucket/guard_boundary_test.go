package tokenbucket

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// guardConfigs are the layouts the boundary tests below run on: a slow rate
// with a burst above it (a Range of weeks, a fill time of days) and the
// fastest rate (a Range of about 70 minutes, a fill time of 1 ms).
var guardConfigs = []struct {
	name   string
	limit  int
	window time.Duration
	burst  int
}{
	{"1per24h_burst2", 1, 24 * time.Hour, 2},
	{"1Mi_per_ms", 1 << 20, time.Millisecond, 1 << 20},
}

// TestOvertakenSweepLeavesGenerationAndDrainedKey: a sweep A reads the clock
// at t1 and stalls; meanwhile sweep B, at sB more than Range/4 past t1,
// completes and records generation sB, and a key is drained at τ, late
// under sB. A then runs at s = sB − Range/4 (its reading, raised) under
// generation sB, keeps the drained key (not full at s) and completes. It
// must record nothing: s is behind the generation, and generations only
// grow. Recorded, s would put τ a whole guard span past the generation,
// outside invariant G, and the next request, at t less than a fill time
// after τ but a guard span and a fill time past s, would sweep under s,
// kill every word unread as full, and find the drained key fresh: a full
// burst admitted early. With the generation left at sB, the key is read
// and answers as on a limiter that saw no stalled sweep.
func TestOvertakenSweepLeavesGenerationAndDrainedKey(t *testing.T) {
	for _, tc := range guardConfigs {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(stallClock)
			lim, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst), hotlimit.WithClock(clk.clock))
			require.NoError(t, err)
			lim.sweeping.Store(true) // the test runs every sweep itself
			fill, back, hard := lim.fill, lim.back, lim.hard
			var ctlNow atomic.Int64 // the control: the same calls, no stalled sweep
			ctl, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst), hotlimit.WithClock(ctlNow.Load))
			require.NoError(t, err)
			ctl.sweeping.Store(true)

			t1 := back / 2
			sB := t1 + back + fill // A's reading t1 is more than Range/4 behind sB
			s := sB - back         // where A runs: its reading, raised
			at := s + hard + fill + fill/8
			tau := at - fill/2
			require.Less(t, tau-sB, hard, "the drain at τ reads under sB, sweeping nothing")
			require.Less(t, at-sB, hard, "under sB, the request at t sweeps nothing")
			require.GreaterOrEqual(t, at-s-fill, hard, "under s, the request at t would kill every word unread")
			require.Less(t, at-tau, fill, "the key is not full at t")

			// A: Sweep reads the clock at t1 and stalls.
			clk.arm(t1)
			done := make(chan int, 1)
			go func() { done <- lim.Sweep() }()
			<-clk.read

			// B completes at sB; the key is drained at τ, under sB.
			for _, l := range []*Limiter{lim, ctl} {
				clk.now.Store(sB)
				ctlNow.Store(sB)
				require.Zero(t, l.Sweep())
				require.Equal(t, sB, l.swept.Load(), "B recorded its generation")
				clk.now.Store(tau)
				ctlNow.Store(tau)
				require.True(t, l.Take("k", tc.burst).Allowed)
				require.Equal(t, sB, l.swept.Load(), "the drain swept nothing")
			}

			// A runs under sB at s, behind it, and completes.
			close(clk.release)
			assert.Zero(t, <-done, "A keeps the drained key")
			assert.Equal(t, sB, lim.swept.Load(), "the generation never moves back")
			assert.True(t, guardHolds(t, lim, "k"), "G for the drained key")

			// Less than a fill time after the drain, the key is not full.
			clk.now.Store(at)
			ctlNow.Store(at)
			want := ctl.Take("k", 0)
			require.Less(t, want.Remaining, tc.burst, "the control's key is not full at t")
			assert.Equal(t, want, lim.Take("k", 0), "the drained key's state at t")
			want = ctl.Take("k", tc.burst)
			require.False(t, want.Allowed, "the control denies a full burst at t")
			assert.Equal(t, want, lim.Take("k", tc.burst), "a full burst at t")
			assert.Equal(t, 1, lim.Len(), "the drained key is held")
		})
	}
}
