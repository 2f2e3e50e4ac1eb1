package hotlimit_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

func TestValidateNamesTheField(t *testing.T) {
	ok := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Millisecond}
	require.NoError(t, ok.Validate())
	for i, tc := range []struct {
		c     hotlimit.Config
		field string
	}{
		{hotlimit.Config{Limit: 1, Window: time.Second}, "Config.Algorithm"},
		{hotlimit.Config{Algorithm: 200, Limit: 1, Window: time.Second}, "Config.Algorithm"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 0, Window: time.Second}, "Config.Limit"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: -1, Window: time.Second}, "Config.Limit"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1}, "Config.Window"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1, Window: -1}, "Config.Window"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 1, Burst: -1}, "Config.Burst"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: 1, Burst: 2}, "Config.Burst"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 1, Window: 1, Burst: 2}, "Config.Burst"},
		// A Burst equal to the Limit is still a Burst, which only the
		// token bucket and GCRA take (WithBurst of the limit is the
		// constructors' leniency, not Validate's).
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Second, Burst: 5}, "Config.Burst 5: SlidingLog has no burst"},
		// Unlimited takes no Limit, Window or Burst.
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Limit: 1}, "Config.Limit 1: Unlimited takes no limit"},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Window: time.Second}, "Config.Window 1s: Unlimited takes no window"},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Burst: 1}, "Config.Burst 1: Unlimited takes no burst"},
		// Outside the algorithm's range.
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 30, Window: time.Second}, "Config.Limit 1073741824 out of range [1, 1048576] for TokenBucket"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1<<16 + 1, Window: time.Second}, "Config.Limit 65537 out of range [1, 65536]"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Nanosecond}, "Config.Window 1ns out of range [1ms, 24h0m0s]"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: 367 * 24 * time.Hour}, "Config.Window 8808h0m0s out of range"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second, Burst: 1<<20 + 1}, "Config.Burst 1048577 out of range [1, 1048576]"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 24 * time.Hour, Burst: 367}, "Config.Burst 367 of 1 per 24h0m0s takes longer than"},
	} {
		err := tc.c.Validate()
		require.Error(t, err, "case %d", i)
		assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig), "case %d", i)
		assert.Contains(t, err.Error(), tc.field, "case %d", i)
		if !strings.Contains(tc.field, "range") && !strings.Contains(tc.field, "takes longer") {
			// A field no backend takes, not one outside the in-memory
			// range: ValidateFields, which leaves ranges to the backend,
			// refuses it as Validate does.
			ferr := tc.c.ValidateFields()
			require.Error(t, ferr, "case %d: ValidateFields", i)
			assert.Equal(t, err.Error(), ferr.Error(), "case %d: ValidateFields", i)
		}
	}
}

func TestAlgorithmString(t *testing.T) {
	assert.Equal(t, "TokenBucket", hotlimit.TokenBucket.String())
	assert.Equal(t, "FixedWindow", hotlimit.FixedWindow.String())
	assert.Equal(t, "SlidingLog", hotlimit.SlidingLog.String())
	assert.Equal(t, "GCRA", hotlimit.GCRA.String())
	assert.Equal(t, "SlidingCounter", hotlimit.SlidingCounter.String())
	assert.Equal(t, "Algorithm(0)", hotlimit.Algorithm(0).String())
	assert.Equal(t, "GCRA 100/1m0s burst 10", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Burst: 10}.String())
	for _, c := range []hotlimit.Config{
		{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 10},
		{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Burst: 1000},
	} {
		assert.NoError(t, c.Validate())
	}
	assert.Equal(t, "TokenBucket 5/1s", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}.String())
}

// Config.String's forms, as its doc lists them: the burst only when set,
// Unlimited bare, the scope's name after "per", then " shadow".
func TestConfigStringForms(t *testing.T) {
	for _, tc := range []struct {
		c    hotlimit.Config
		want string
	}{
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}, "TokenBucket 5/1s"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 10}, "TokenBucket 100/1m0s burst 10"},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited}, "Unlimited"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Hour, Scope: hotlimit.PerAPI}, "SlidingLog 3/1h0m0s per api"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 3, Window: time.Second, Scope: hotlimit.Global}, "GCRA 3/1s per global"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second, Shadow: true}, "FixedWindow 5/1s shadow"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second, Scope: hotlimit.PerUser, Shadow: true}, "FixedWindow 5/1s per user shadow"},
		{hotlimit.Config{Algorithm: hotlimit.Unlimited, Scope: hotlimit.PerUser}, "Unlimited per user"},
	} {
		assert.Equal(t, tc.want, tc.c.String())
	}
}

func TestOptions(t *testing.T) {
	o := hotlimit.NewOptions()
	require.NotNil(t, o.Clock)
	assert.Zero(t, o.AutoSweep)
	fake := func() int64 { return 42 }
	o = hotlimit.NewOptions(hotlimit.WithClock(fake), hotlimit.WithClock(nil), nil, hotlimit.WithAutoSweep(-3))
	assert.EqualValues(t, 42, o.Clock())
	assert.Zero(t, o.AutoSweep)
	assert.Equal(t, 10, hotlimit.NewOptions(hotlimit.WithAutoSweep(10)).AutoSweep)
}

// TestOptionsLaterNilsKeepEarlierValues: a nil Factory keeps the one given
// before it, as a nil Clock does; a negative key cap is no cap, 0, as a
// negative auto-sweep is; and every WithExtension adds its value, in order,
// beside those given before (redislimit reads each of its own).
func TestOptionsLaterNilsKeepEarlierValues(t *testing.T) {
	f := hotlimit.Factory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return nil, nil })
	o := hotlimit.NewOptions(hotlimit.WithFactory(f), hotlimit.WithFactory(nil))
	assert.NotNil(t, o.Factory, "a nil Factory replaced the one given before it")
	assert.Nil(t, hotlimit.NewOptions(hotlimit.WithFactory(nil)).Factory)

	assert.Zero(t, hotlimit.NewOptions(hotlimit.WithMaxKeys(-3)).MaxKeys)
	assert.Zero(t, hotlimit.NewOptions(hotlimit.WithMaxKeys(5), hotlimit.WithMaxKeys(-1)).MaxKeys)
	assert.Equal(t, 5, hotlimit.NewOptions(hotlimit.WithMaxKeys(5)).MaxKeys)

	o = hotlimit.NewOptions(hotlimit.WithExtension("a"), hotlimit.WithClock(nil), hotlimit.WithExtension(2))
	assert.Equal(t, []any{"a", 2}, o.Extensions)
}

func TestMonotonicNeverDecreases(t *testing.T) {
	prev := hotlimit.Monotonic()
	for range 10000 {
		now := hotlimit.Monotonic()
		require.GreaterOrEqual(t, now, prev)
		prev = now
	}
}

func TestCoarseClock(t *testing.T) {
	c := hotlimit.NewCoarseClock(time.Millisecond)
	assert.Equal(t, time.Millisecond, c.Resolution())
	assert.Equal(t, 50*time.Microsecond, hotlimit.NewCoarseClock(0).Resolution())

	// Stopped: reads the monotonic clock.
	before := hotlimit.Monotonic()
	assert.GreaterOrEqual(t, c.Now(), before)

	c.Start()
	c.Start() // no-op
	first := c.Now()
	require.Eventually(t, func() bool { return c.Now() > first }, 10*time.Second, time.Millisecond)

	// Never decreases, read from several goroutines while it ticks.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			prev := c.Now()
			for range 20000 {
				now := c.Now()
				assert.GreaterOrEqual(t, now, prev)
				prev = now
			}
		})
	}
	wg.Wait()
	// It is never ahead of the monotonic clock, and keeps up with it:
	// scheduling may delay a tick, not stop it. (Now is read first: a tick
	// between a monotonic reading and Now would publish a later reading. And
	// how far it lags is logged, not bounded: a loaded machine may starve
	// the ticker for any time.)
	now := c.Now()
	mono := hotlimit.Monotonic()
	assert.LessOrEqual(t, now, mono, "ahead of the monotonic clock")
	t.Logf("lag behind the monotonic clock: %v", time.Duration(mono-now))
	require.Eventually(t, func() bool { return c.Now() >= mono }, 10*time.Second, time.Millisecond, "the ticker stopped")

	c.Stop()
	c.Stop() // no-op
	last := hotlimit.Monotonic()
	assert.GreaterOrEqual(t, c.Now(), last, "a stopped clock reads the monotonic clock")
	c.Start()
	defer c.Stop()
	assert.GreaterOrEqual(t, c.Now(), last, "restarting never goes back")
}

func BenchmarkClock(b *testing.B) {
	b.Run("clock=monotonic", func(b *testing.B) {
		for b.Loop() {
			hotlimit.Monotonic()
		}
	})
	b.Run("clock=coarse", func(b *testing.B) {
		c := hotlimit.NewCoarseClock(time.Millisecond)
		c.Start()
		defer c.Stop()
		for b.Loop() {
			c.Now()
		}
	})
}

func TestRejectBurst(t *testing.T) {
	assert.NoError(t, hotlimit.NewOptions().RejectBurst("x", 5))
	assert.NoError(t, hotlimit.NewOptions(hotlimit.WithBurst(5)).RejectBurst("x", 5))
	for _, burst := range []int{6, 4, 1, -1} {
		err := hotlimit.NewOptions(hotlimit.WithBurst(burst)).RejectBurst("x", 5)
		require.Error(t, err, "burst %d", burst)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
		assert.Contains(t, err.Error(), fmt.Sprintf("x: burst %d", burst))
	}
}

// TestCoarseClockOnlyMovesOnItsTicks: between two ticks a running coarse
// clock reads the same time, however far the monotonic clock moves. The
// clock ticks once an hour, so that no tick can come between the readings
// however the test is scheduled.
func TestCoarseClockOnlyMovesOnItsTicks(t *testing.T) {
	c := hotlimit.NewCoarseClock(time.Hour)
	c.Start()
	defer c.Stop()
	first := c.Now()
	for hotlimit.Monotonic() <= first+int64(time.Millisecond) {
		// The monotonic clock moves on; the coarse one must not.
	}
	assert.Equal(t, first, c.Now(), "a running coarse clock only moves on its ticks")
}

// TestCoarseClockZeroValue: a CoarseClock declared without NewCoarseClock is
// a stopped clock of the least resolution, as NewCoarseClock(0) returns: Now
// reads the monotonic clock, Start and Stop work, and nothing panics.
func TestCoarseClockZeroValue(t *testing.T) {
	var c hotlimit.CoarseClock
	assert.Equal(t, hotlimit.NewCoarseClock(0).Resolution(), c.Resolution())

	before := hotlimit.Monotonic()
	stopped := c.Now()
	assert.GreaterOrEqual(t, stopped, before, "stopped: reads the monotonic clock")

	c.Start()
	running := c.Now()
	assert.GreaterOrEqual(t, running, stopped)
	require.Eventually(t, func() bool { return c.Now() > running }, 10*time.Second, time.Millisecond, "the ticker never ticked")
	c.Stop()
	c.Stop()
	assert.GreaterOrEqual(t, c.Now(), running)
}
