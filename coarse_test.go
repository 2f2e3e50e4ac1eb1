package hotlimit_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// coarseStep is a step of a script run on a CoarseClock: a tick, which
// publishes the real time, or a request at the real time, which the limiter
// sees at the time last published.
type coarseStep struct {
	at      time.Duration // real time, from the script's start
	tick    bool
	allowed bool // a request's decision on the coarse clock
	precise bool // the model's decision at the request's real time
}

// TestCoarseClockAdmissionError runs, for every in-memory algorithm (limit 1
// per second), scripts of ticks and requests on a CoarseClock whose ticks the
// test makes. Every decision is the model's at the time Now reported, which
// lags the request by at most the time since the last tick: the limiter
// never admits more than its model allows at that time. Measured in real
// time the error goes both ways, as CoarseClock documents: a request stamped
// early leaves its window (or is refilled) early, so a later request passes
// where the model, run on the requests' real times, denies it; by no more
// than the lag. At a window's edge, a request made after the edge but
// stamped before it counts in the earlier window; one window on, a request
// stamped early has left the window early. With the ticker starved (no tick
// for 400 ms), the same holds with the starvation as the lag: while time
// stands still, a key admits less, and afterwards up to the starvation more.
func TestCoarseClockAdmissionError(t *testing.T) {
	const window = time.Second
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	// A request at 1000.3 ms stamped 999.5, then one at 1000.6 ms stamped
	// 1000.5: the first counts in window 0, the second in window 1, where a
	// precise clock counts both in window 1.
	edge := []coarseStep{
		{at: ms(999.5), tick: true},
		{at: ms(1000.3), allowed: true, precise: true},
		{at: ms(1000.5), tick: true},
		{at: ms(1000.6), allowed: true, precise: false},
	}
	// A request at 0.9 ms stamped 0, then one at 1000 ms stamped 1000: the
	// first has left its window (or been refilled) 0.9 ms early.
	later := func(lag time.Duration) []coarseStep {
		return []coarseStep{
			{at: 0, tick: true},
			{at: lag, allowed: true, precise: true},
			{at: window, tick: true},
			{at: window, allowed: true, precise: false},
		}
	}
	type build func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error)
	algorithms := []struct {
		name  string
		build build
	}{
		{"tokenbucket", func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error) {
			l, err := tokenbucket.New(1, window, hotlimit.WithClock(clock))
			return l, models.NewTokenBucket(1, 1, window, clock()).Take, err
		}},
		{"gcra", func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error) {
			l, err := gcra.New(1, window, hotlimit.WithClock(clock))
			return l, models.NewGCRA(1, 1, window, clock()).Take, err
		}},
		{"fixedwindow", func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error) {
			l, err := fixedwindow.New(1, window, hotlimit.WithClock(clock))
			return l, models.NewFixedWindow(1, window).Take, err
		}},
		{"slidingcounter", func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error) {
			l, err := slidingcounter.New(1, window, hotlimit.WithClock(clock))
			return l, models.NewSlidingCounter(1, window).Take, err
		}},
		{"slidinglog", func(clock hotlimit.Clock) (hotlimit.Limiter, limitertest.Model, error) {
			l, err := slidinglog.New(1, window, hotlimit.WithClock(clock))
			return l, models.NewSlidingLog(1, window).Take, err
		}},
	}
	// Which scripts show an error for which algorithm: a window's edge for
	// the windowed counts, a whole window on for the others.
	shows := map[string]string{
		"tokenbucket": "later", "gcra": "later", "slidinglog": "later",
		"fixedwindow": "edge", "slidingcounter": "edge",
	}
	const start = int64(time.Hour) // the real time at the script's start
	for _, alg := range algorithms {
		scripts := []struct {
			name   string
			script []coarseStep
		}{
			{"nolag", later(0)},
			{"edge", edge},
			{"later", later(ms(0.9))},
			{"starved", later(400 * time.Millisecond)},
		}
		for _, sc := range scripts {
			name, script := sc.name, sc.script
			if name != "nolag" && name != shows[alg.name] && (name != "starved" || shows[alg.name] != "later") {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", alg.name, name), func(t *testing.T) {
				var real atomic.Int64
				real.Store(start)
				c := hotlimit.NewCoarseClockOn(time.Hour, real.Load) // no tick but the test's
				c.Start()
				defer c.Stop()
				lim, atCoarse, err := alg.build(c.Now)
				require.NoError(t, err)
				_, atReal, err := alg.build(real.Load)
				require.NoError(t, err)
				var maxLag time.Duration
				for i, s := range script {
					real.Store(start + int64(s.at))
					if s.tick {
						c.Tick()
						continue
					}
					stamp := c.Now()
					lag := time.Duration(real.Load() - stamp)
					require.GreaterOrEqual(t, lag, time.Duration(0), "step %d: Now is never ahead", i)
					maxLag = max(maxLag, lag)
					got := lim.Allow("k")
					assert.Equal(t, atCoarse("k", 1, stamp).Allowed, got, "step %d: the model's decision at the time Now reported", i)
					precise := atReal("k", 1, real.Load()).Allowed
					if name == "nolag" {
						assert.Equal(t, precise, got, "step %d: no lag, no error", i)
						continue
					}
					assert.Equal(t, s.allowed, got, "step %d: on the coarse clock", i)
					assert.Equal(t, s.precise, precise, "step %d: on a precise clock", i)
				}
				if name != "later" && name != "starved" {
					return
				}
				// The last request passed where a precise clock denies it,
				// and a precise clock passes it one lag later: a key passes
				// at most what the model allows over a span one lag longer.
				last := script[len(script)-1]
				real.Store(start + int64(last.at+maxLag))
				assert.True(t, atReal("k", 1, real.Load()).Allowed, "a precise clock passes it %v later", maxLag)
			})
		}
	}
}

// TestCoarseClockStepBackStandsStill: a source that steps back, while the
// clock runs (a tick) and while it is stopped (a direct reading), leaves Now
// where it was, so a limiter on it sees time stand still, never go back:
// every decision is the model's at the latest time Now reported, which
// admits nothing a step back would (a window the key had left, a log whose
// entries it had expired).
func TestCoarseClockStepBackStandsStill(t *testing.T) {
	const window = time.Second
	var real atomic.Int64
	real.Store(int64(time.Hour))
	c := hotlimit.NewCoarseClockOn(time.Hour, real.Load)
	c.Start()
	defer c.Stop()
	lim, err := fixedwindow.New(2, window, hotlimit.WithClock(c.Now))
	require.NoError(t, err)
	model := models.NewFixedWindow(2, window)
	top := c.Now()
	require.True(t, lim.Allow("k"))
	model.Take("k", 1, top)

	for i, back := range []time.Duration{window, 3 * window / 2} {
		real.Store(top - int64(back)) // a window the key has not used
		c.Tick()
		assert.Equal(t, top, c.Now(), "step %d: a tick behind the time published keeps it", i)
		c.Stop()
		assert.Equal(t, top, c.Now(), "step %d: a stopped clock's reading behind it keeps it too", i)
		c.Start()
		want := model.Take("k", 1, top)
		assert.Equal(t, want, lim.Take("k", 1), "step %d: the model's decision at the latest time", i)
	}
	assert.False(t, lim.Allow("k"), "the key's window, full, is still the current one")
}

// TestCoarseClockStartPublishesAReading: Start publishes a reading of its
// own, so that the first value a started clock returns, before its first
// tick, lags the source by no more than the time since Start, whatever the
// clock published before (nothing, or a reading from long ago, before a
// Stop).
func TestCoarseClockStartPublishesAReading(t *testing.T) {
	var src atomic.Int64
	src.Store(int64(5 * time.Hour))
	c := hotlimit.NewCoarseClockOn(time.Hour, src.Load) // no tick but the test's
	c.Start()
	assert.Equal(t, int64(5*time.Hour), c.Now(), "a new clock, started: the reading at Start")
	c.Stop()

	src.Store(int64(7 * time.Hour)) // stopped for two hours, read by no one
	c.Start()
	defer c.Stop()
	assert.Equal(t, int64(7*time.Hour), c.Now(), "restarted: the reading at Start, not the time it stopped")
}

// TestCoarseClockStartOfARunningClockDoesNothing: Start on a clock already
// running publishes no reading of its own: Now keeps the time published
// until the next tick. One Stop then stops it, and Now reads the source.
func TestCoarseClockStartOfARunningClockDoesNothing(t *testing.T) {
	var src atomic.Int64
	src.Store(int64(time.Hour))
	c := hotlimit.NewCoarseClockOn(time.Hour, src.Load) // no tick but the test's
	c.Start()
	src.Store(int64(2 * time.Hour))
	c.Start()
	assert.Equal(t, int64(time.Hour), c.Now(), "a second Start published a reading")
	c.Stop()
	assert.Equal(t, int64(2*time.Hour), c.Now(), "stopped by one Stop: Now reads the source")
}
