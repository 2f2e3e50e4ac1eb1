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

// newGuardLimiter is a limiter of limit per window, burst burst, on clock,
// whose sweeps the test runs itself: none starts in the background.
func newGuardLimiter(t *testing.T, limit int, window time.Duration, burst int, clock func() int64) *Limiter {
	t.Helper()
	lim, err := New(limit, window, hotlimit.WithBurst(burst), hotlimit.WithClock(clock))
	require.NoError(t, err)
	lim.sweeping.Store(true)
	return lim
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
			lim := newGuardLimiter(t, tc.limit, tc.window, tc.burst, clk.clock)
			fill, back, hard := lim.fill, lim.back, lim.hard
			var ctlNow atomic.Int64 // the control: the same calls, no stalled sweep
			ctl := newGuardLimiter(t, tc.limit, tc.window, tc.burst, ctlNow.Load)

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

// TestAllFullSweepCountsStalledAdmissionAtItsReading: a sweep that starts
// exactly at g + hard + fill, g the generation, is the kind that kills every
// live word unread: each one's timestamp is below g + hard, so a fill time
// or more behind s, and full. Such a sweep raises no floor (the floor is a
// judging sweep's s − Range/4). A caller that read the clock at t0, long
// before s, and stalled, and that admits from the key's fresh word while the
// sweep holds it, is then counted at its own reading t0: its Decision is
// that of the same Take at t0 raced by nothing, and its Receipt's At is t0,
// the clock reading of the call, as hotlimit.Receipt says. (Judged, the boundary's words would
// all be full too, and killed just the same, but the floor would move the
// stalled admission to s − Range/4.) The sweep then kills the word the
// admission wrote, full at s, and records s.
func TestAllFullSweepCountsStalledAdmissionAtItsReading(t *testing.T) {
	for _, tc := range guardConfigs {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(stallClock)
			lim := newGuardLimiter(t, tc.limit, tc.window, tc.burst, clk.clock)
			fill, back, hard := lim.fill, lim.back, lim.hard

			g := back / 2
			clk.now.Store(g)
			require.Zero(t, lim.Sweep())
			require.Equal(t, g, lim.swept.Load())
			floor := lim.floor.Load()
			s := g + hard + fill // exactly where the sweep stops judging
			t0 := g + fill/3
			require.Less(t, t0, s-back, "t0 is more than Range/4 before s")
			require.Less(t, t0-g, lim.soft, "t0 reads under g")

			// The caller: a Take of one token from a new key, stalled on
			// its reading t0.
			clk.arm(t0)
			type taken struct {
				d hotlimit.Decision
				r hotlimit.Receipt
			}
			result := make(chan taken, 1)
			go func() {
				d, r := lim.TakeReceipt("k", 1)
				result <- taken{d, r}
			}()
			<-clk.read
			clk.now.Store(s)

			// The sweep at s: after its Load of the fresh word, the
			// caller goes on and its admission lands.
			var got taken
			landed := false
			lim.sweepLoaded = func() {
				if landed {
					return
				}
				landed = true
				close(clk.release)
				got = <-result
			}
			assert.Equal(t, 1, lim.Sweep(), "the word the admission wrote is full at s")
			require.True(t, landed, "the admission landed inside the sweep")
			assert.Equal(t, s, lim.swept.Load(), "the sweep recorded its generation")
			assert.Equal(t, floor, lim.floor.Load(), "a sweep that judges nothing raises no floor")

			// The control: the same Take at t0, raced by nothing.
			var ctlNow atomic.Int64
			ctl, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst), hotlimit.WithClock(ctlNow.Load))
			require.NoError(t, err)
			ctlNow.Store(t0)
			want, wantR := ctl.TakeReceipt("k", 1)
			require.Equal(t, hotlimit.Receipt{N: 1, At: t0}, wantR)
			assert.Equal(t, want, got.d, "the admission, decided at its reading t0")
			assert.Equal(t, wantR, got.r, "the receipt's At is the call's clock reading t0")
			_, held := lim.cells.Peek("k")
			assert.False(t, held, "the key, full at s, is evicted")
		})
	}
}
