package slidinglog_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestFrozenClockHammer: exactly limit per key and round, from 32
// goroutines, with and without a concurrent Sweep (see limitertest).
func TestFrozenClockHammer(t *testing.T) {
	limitertest.FrozenHammer(t, limitertest.Adapt(slidinglog.New), time.Second,
		func(r int) time.Duration { return time.Duration(r) * time.Second },
		func(limit int) int { return limit })
}

// TestFrozenClockTakeN: goroutines asking for n > 1 at once never get more
// than limit in all, even with single requests filling what is left; and
// once the window has passed, the full limit is available again in one Take:
// claims left by Takes denied under contention count for one window only.
func TestFrozenClockTakeN(t *testing.T) {
	const goroutines = 16
	for _, limit := range []int{2, 7, 100} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			var now atomic.Int64
			lim, err := slidinglog.New(limit, time.Second, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			for round := range 20 {
				now.Store(int64(round) * int64(time.Second))
				var passed atomic.Int64
				start := make(chan struct{})
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						<-start
						for i := range 2 * limit {
							n := 1 + (g+i)%3
							if lim.Take("k", n).Allowed {
								passed.Add(int64(n))
							}
						}
					})
				}
				close(start)
				wg.Wait()
				for lim.Allow("k") {
					passed.Add(1)
				}
				assert.LessOrEqual(t, passed.Load(), int64(limit), "round %d", round)
				assert.Positive(t, passed.Load(), "round %d", round)
			}
			now.Add(int64(time.Second))
			assert.True(t, lim.Take("k", limit).Allowed, "the full limit after a window")
		})
	}
}

// TestPhasedHammer: in phases of a clock that moves forward, back and to
// window boundaries, concurrent passes of Allow and Take(key, 1) equal the
// sequential model's, and so does the state reported afterwards; with
// sweep=true, Sweeps race the traffic and evict keys in every idle phase
// (see limitertest). One request at a time: under contention Take with
// n > 1 may be denied although the requests fit (see Limiter.Take).
func TestPhasedHammer(t *testing.T) {
	limitertest.PhasedHammer(t, limitertest.Adapt(slidinglog.New), func(limit int, window time.Duration) limitertest.Model {
		return models.NewSlidingLog(limit, window).Take
	}, limitertest.MaxN(1))
}

// TestMovingClockNeverOverAdmits: with a clock that advances on every read,
// many goroutines on one key, asking for 1 to 3 requests at once while a
// Sweep runs, never get more than limit admissions whose clock readings span
// less than a window. Each admission's logged time lies between the clock
// just before the call and just after it, so the check counts, for each
// admission, those that surely lie within a window of it.
func TestMovingClockNeverOverAdmits(t *testing.T) {
	const (
		goroutines = 8
		limit      = 5
		window     = int64(time.Millisecond)
	)
	var now atomic.Int64
	clock := func() int64 { return now.Add(1 + rand.Int64N(window/100)) }
	lim, err := slidinglog.New(limit, time.Duration(window), hotlimit.WithClock(clock))
	require.NoError(t, err)
	type span struct{ from, to int64 }
	var mu sync.Mutex
	var admitted []span
	stop := make(chan struct{})
	sweeper, _ := limitertest.SweepUntil(lim, stop)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range 3000 {
				n := 1 + (g+i)%3
				from := now.Load()
				ok := lim.Take("k", n).Allowed
				to := now.Load()
				if ok {
					mu.Lock()
					for range n {
						admitted = append(admitted, span{from, to})
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	sweeper.Wait()
	require.NotEmpty(t, admitted)
	for _, a := range admitted {
		// Admissions that surely lie in (a.to − window, a.from]: their whole
		// span does.
		within := 0
		for _, b := range admitted {
			if b.from > a.to-window && b.to <= a.from {
				within++
			}
		}
		assert.LessOrEqual(t, within, limit)
	}
}

// TestLinearizableRemaining: under a frozen clock, the allowed decisions'
// Remaining values are limit − 1, ..., 0, each exactly once, whatever the
// interleaving (see limitertest).
func TestLinearizableRemaining(t *testing.T) {
	limitertest.LinearizableRemaining(t, limitertest.Adapt(slidinglog.New), time.Second,
		func(r int) time.Duration { return time.Duration(r) * time.Second },
		func(limit int) int { return limit })
}

// TestExtremeClockDecisions: with clocks at and between both ends of int64, no
// Decision has a negative duration or a denial with RetryAfter 0 (see
// limitertest).
func TestExtremeClockDecisions(t *testing.T) {
	limitertest.ExtremeClocks(t, limitertest.Adapt(slidinglog.New), slidinglog.MinWindow, time.Second, slidinglog.MaxWindow)
}
