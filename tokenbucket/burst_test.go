package tokenbucket

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestBurstScript: 5 per second with a burst of 7. A fresh key passes 7 at
// once; 400 ms later exactly 2 (the refill is still 5 per second); a full
// bucket holds 7, never more, however long it idles.
func TestBurstScript(t *testing.T) {
	var now atomic.Int64
	lim, err := New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
	require.NoError(t, err)
	for i, step := range []struct {
		advance time.Duration
		n       int
		want    bool
	}{
		{0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true}, {0, 1, true},
		{0, 1, false}, // the burst of 7 is spent
		{400 * time.Millisecond, 1, true},
		{0, 1, true},
		{0, 1, false}, // 400 ms at 5/s: exactly 2
		{time.Hour, 7, true},
		{0, 1, false}, // full is 7, not more
		{1400 * time.Millisecond, 8, false},
	} {
		now.Add(int64(step.advance))
		d := lim.Take("k", step.n)
		assert.Equal(t, step.want, d.Allowed, "step %d", i)
		assert.Equal(t, 5, d.Limit, "step %d: Limit is the rate's, not the burst", i)
	}
	d := lim.Take("k", 0)
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 5, Remaining: 7}, d, "1.4 s fills 7 tokens at 5/s")
	d = lim.Take("k", 8)
	assert.Equal(t, hotlimit.Never, d.RetryAfter, "more than the burst never passes")
	d = lim.Take("k", 7)
	require.True(t, d.Allowed)
	assert.Equal(t, 1400*time.Millisecond, d.ResetAfter, "empty to full: 7 tokens at 5 per second")
	d = lim.Take("k", 3)
	assert.Equal(t, 600*time.Millisecond, d.RetryAfter)
}

// TestBurstBelowLimit: 100 per minute with a burst of 10: 10 pass at once,
// then one every 600 ms.
func TestBurstBelowLimit(t *testing.T) {
	var now atomic.Int64
	lim, err := New(100, time.Minute, hotlimit.WithClock(now.Load), hotlimit.WithBurst(10))
	require.NoError(t, err)
	for i := range 10 {
		require.True(t, lim.Allow("k"), "call %d", i)
	}
	d := lim.Take("k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, 600*time.Millisecond, d.RetryAfter)
	assert.Equal(t, 6*time.Second, d.ResetAfter)
	assert.Equal(t, hotlimit.Never, lim.Take("k", 11).RetryAfter)
	now.Add(int64(599 * time.Millisecond))
	assert.False(t, lim.Allow("k"))
	now.Add(int64(time.Millisecond))
	assert.True(t, lim.Allow("k"))
	assert.False(t, lim.Allow("k"))
}

// TestBurstRange: the burst's range errors name it, say the range, and wrap
// ErrInvalidConfig; the limits of the range are accepted.
func TestBurstRange(t *testing.T) {
	for i, tc := range []struct {
		limit  int
		window time.Duration
		burst  int
		msg    string
	}{
		{5, time.Second, MaxBurst + 1, "tokenbucket: burst 1048577 out of range [1, 1048576]"},
		{1, 24 * time.Hour, 367, "tokenbucket: burst 367 of limit 1 per 24h0m0s takes longer than 8784h0m0s to refill; burst must lie in [1, 366]"},
		{1, time.Hour, 8785, "burst must lie in [1, 8784]"},
	} {
		_, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst))
		require.Error(t, err, "case %d", i)
		assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
		assert.Contains(t, err.Error(), tc.msg, "case %d", i)
		_, err = New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst-1))
		assert.NoError(t, err, "case %d: one less", i)
	}
	_, err := New(5, time.Second, hotlimit.WithBurst(-1))
	assert.ErrorContains(t, err, "tokenbucket: burst -1 out of range [1, 1048576], or 0 for the limit", "0 is a burst too")
	for _, c := range []struct {
		limit, burst int
		window       time.Duration
	}{
		{1, 1, MaxWindow}, {1, MaxBurst, time.Second}, {MaxLimit, 1, MinWindow}, {MaxLimit, MaxBurst, MinWindow},
		{1, 366, MaxWindow}, {1 << 12, MaxBurst, MaxWindow},
	} {
		lim, err := New(c.limit, c.window, hotlimit.WithBurst(c.burst))
		require.NoError(t, err, "%+v", c)
		assert.Equal(t, c.burst, lim.Take("k", c.burst).Remaining+c.burst, "%+v: a fresh key holds the burst", c)
		r := time.Duration(lim.b.Range())
		assert.GreaterOrEqual(t, r, 4*time.Duration(lim.fill), "%+v", c)
		assert.LessOrEqual(t, lim.hard+lim.fill+lim.back, int64(r), "%+v", c)
	}
}

// TestFrozenClockHammerBurst: with the clock frozen, 32 goroutines get exactly
// the burst per key, for bursts below and above the limit.
func TestFrozenClockHammerBurst(t *testing.T) {
	const goroutines = 32
	for _, c := range []struct{ limit, burst int }{{100, 10}, {5, 7}, {1, 2}, {7, 1}, {2, 100}} {
		for _, sweeper := range []bool{false, true} {
			t.Run(fmt.Sprintf("limit=%d/burst=%d/sweeper=%t", c.limit, c.burst, sweeper), func(t *testing.T) {
				lim, err := New(c.limit, time.Second, hotlimit.WithClock(func() int64 { return 42 }), hotlimit.WithBurst(c.burst))
				require.NoError(t, err)
				perG := max(20*c.burst, 4000) / goroutines
				var passed atomic.Int64
				var stop atomic.Bool
				var sweeps sync.WaitGroup
				if sweeper {
					sweeps.Go(func() {
						for !stop.Load() {
							lim.Sweep()
							runtime.Gosched()
						}
					})
				}
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range goroutines {
					wg.Go(func() {
						<-start
						for i := range perG {
							if (g+i)%2 == 0 && lim.Allow("k") {
								passed.Add(1)
							} else if n := 1 + (g+i)%3; (g+i)%2 == 1 && lim.Take("k", n).Allowed {
								passed.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				stop.Store(true)
				sweeps.Wait()
				// A Take of 2 or 3 may have been denied with a token or two
				// left: drain them. Then exactly the burst passed.
				for lim.Allow("k") {
					passed.Add(1)
				}
				assert.EqualValues(t, c.burst, passed.Load())
			})
		}
	}
}

// TestPhasedHammerBurst: the phased hammer (see TestPhasedHammer) with bursts
// other than the limit: each phase takes exactly what the model holds.
func TestPhasedHammerBurst(t *testing.T) {
	phases, goroutines := 100, 8
	if testing.Short() {
		phases = 20
	}
	for ci, cfg := range []struct {
		limit, burst int
		window       time.Duration
	}{
		{100, 10, time.Minute},
		{5, 7, time.Second},
		{3, 40, 7 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("limit=%d/burst=%d/window=%v", cfg.limit, cfg.burst, cfg.window), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(ci), 12))
			tw := newBurstTwin(t, cfg.limit, cfg.burst, cfg.window, r.Int64N(1e15), time.Millisecond)
			require.True(t, tw.exact)
			lim, m := tw.lim, tw.m
			for phase := range phases {
				step := r.Int64N(2 * lim.fill)
				now := tw.now.Add(step / int64(time.Millisecond) * int64(time.Millisecond))
				mt, _ := m.At(now)
				want := models.FloorRat(m.Tokens("k", mt))
				var taken atomic.Int64
				var wg sync.WaitGroup
				start := make(chan struct{})
				for g := range goroutines {
					wg.Go(func() {
						gr := rand.New(rand.NewPCG(uint64(phase), uint64(g)))
						<-start
						for range 20 {
							if n := 1 + gr.IntN(cfg.burst); lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
						for n := cfg.burst; n >= 1; n /= 2 {
							for lim.Take("k", n).Allowed {
								taken.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				assert.Equal(t, want, taken.Load(), "phase %d", phase)
				if want > 0 {
					m.Admit("k", mt, want)
				}
				tw.checkState("k", fmt.Sprintf("phase %d", phase))
				if t.Failed() {
					break
				}
			}
		})
	}
}
