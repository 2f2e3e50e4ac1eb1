package hotlimit_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestSynctestWaitSleepsOnTheFakeClock: a Wait in a bubble that must wait an
// hour returns once the fake clock has advanced exactly that hour, at once in
// real time.
func TestSynctestWaitSleepsOnTheFakeClock(t *testing.T) {
	began := time.Now()
	synctest.Test(t, func(t *testing.T) {
		lim, err := tokenbucket.New(1, time.Hour)
		require.NoError(t, err)
		require.True(t, lim.Allow("k"))
		start := time.Now()
		require.NoError(t, hotlimit.Wait(t.Context(), lim, "k"))
		assert.Equal(t, time.Hour, time.Since(start), "fake time waited")
		assert.False(t, lim.Allow("k"), "the Wait took the token it waited for")
	})
	// Real time: a Wait on a real timer would take the hour.
	assert.Less(t, time.Since(began), time.Minute, "real time waited")
}

// TestSynctestWaitEndsWithItsContext: in a bubble, a Wait whose context is
// canceled during its sleep returns context.Canceled at the fake time of the
// cancellation, having taken nothing, and one whose deadline comes before
// the RetryAfter returns context.DeadlineExceeded at once.
func TestSynctestWaitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lim, err := tokenbucket.New(1, time.Hour)
		require.NoError(t, err)
		require.True(t, lim.Allow("k"))

		ctx, cancel := context.WithCancel(t.Context())
		go func() {
			time.Sleep(10 * time.Minute)
			cancel()
		}()
		start := time.Now()
		err = hotlimit.Wait(ctx, lim, "k")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 10*time.Minute, time.Since(start), "returned at the cancellation")

		ctx, cancel = context.WithTimeout(t.Context(), 30*time.Minute)
		defer cancel()
		err = hotlimit.Wait(ctx, lim, "k")
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "deadline before the refill: %v", err)
		assert.Equal(t, 10*time.Minute, time.Since(start), "returned at once")

		time.Sleep(50 * time.Minute)
		assert.True(t, lim.Allow("k"), "the refill is whole: neither Wait took it")
	})
}

// TestSynctestPacedLoopWaitsOnlyFakeTime is the README's demonstration of
// testing code that uses hotlimit in a testing/synctest bubble: a loop that
// paces 5 sends at 2 per second with Wait, on a limiter created in the
// bubble, takes exactly 1.5 s of fake time (2 at once, then one every half
// second), and no real time.
func TestSynctestPacedLoopWaitsOnlyFakeTime(t *testing.T) {
	began := time.Now()
	synctest.Test(t, func(t *testing.T) {
		lim, err := tokenbucket.New(2, time.Second) // in the bubble
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for range 5 {
			if err := hotlimit.Wait(t.Context(), lim, "bank"); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 1500*time.Millisecond {
			t.Errorf("5 sends at 2/s took %v of fake time, want 1.5s", d)
		}
	})
	assert.Less(t, time.Since(began), time.Minute, "real time waited")
}
