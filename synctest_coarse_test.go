package hotlimit_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/childproc"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestSynctestCoarseClockStartedInTheBubbleFollowsTheFakeClock: a
// CoarseClock started in a bubble ticks on the fake clock, from the
// bubble's 0, a limiter on it refills on fake time, and once Stopped before
// the bubble's function returns the bubble ends cleanly.
func TestSynctestCoarseClockStartedInTheBubbleFollowsTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := hotlimit.NewCoarseClock(time.Millisecond)
		c.Start()
		defer c.Stop()
		assert.Equal(t, int64(0), c.Now(), "at the bubble's start")
		time.Sleep(time.Millisecond)
		synctest.Wait() // the tick of the same instant has been stored
		assert.Equal(t, int64(time.Millisecond), c.Now(), "one tick later")

		lim, err := tokenbucket.New(1, time.Second, hotlimit.WithClock(c.Now))
		require.NoError(t, err)
		require.True(t, lim.Allow("k"))
		d := lim.Take("k", 1)
		require.False(t, d.Allowed)
		// A clock that did not move would deny at every turn: the
		// deadline, on the fake clock, ends such a Wait.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		start := time.Now()
		require.NoError(t, hotlimit.Wait(ctx, lim, "k"), "Wait on the coarse clock")
		// The Wait wakes at the tick that refills the key; it may ask
		// before that tick is stored, and then waits one more.
		waited := time.Since(start)
		assert.GreaterOrEqual(t, waited, time.Second, "the refill")
		assert.LessOrEqual(t, waited, time.Second+time.Millisecond, "the refill, and at most one tick")
	})
}

// coarseLeftRunningEnv, when set, makes TestSynctestCoarseClockLeftRunning
// the bubble that leaves its clock running, in a test binary of its own.
const coarseLeftRunningEnv = "HOTLIMIT_SYNCTEST_COARSE_LEFT_RUNNING"

// TestSynctestCoarseClockLeftRunningFailsTheBubble: a CoarseClock started in
// a bubble and not stopped before the bubble's function returns fails
// synctest.Test, which names the clock's goroutine: the bubble waits for
// every goroutine it started, and time stops when its function returns. The
// bubble runs in a test binary of its own, as synctest.Test panics.
func TestSynctestCoarseClockLeftRunningFailsTheBubble(t *testing.T) {
	if os.Getenv(coarseLeftRunningEnv) != "" {
		synctest.Test(t, func(t *testing.T) {
			c := hotlimit.NewCoarseClock(time.Millisecond)
			c.Start()
			time.Sleep(time.Second)
			c.Now()
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSynctestCoarseClockLeftRunningFailsTheBubble$", "-test.count=1", "-test.v")
	// The bubble's goroutines are printed at the default traceback level:
	// a GOTRACEBACK=none the test's environment carries would print none,
	// and the clock's goroutine could not be named.
	cmd.Env = append(os.Environ(), coarseLeftRunningEnv+"=1", "GOTRACEBACK=single")
	cmd.SysProcAttr = childproc.Attr()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the bubble fails: %s", out)
	assert.Contains(t, string(out), "main bubble goroutine has exited but blocked goroutines remain")
	assert.Contains(t, string(out), "hotlimit.(*CoarseClock).run", "the goroutine left is the clock's")
}

// TestSynctestCoarseClockStartedOutsideKeepsTheRealTime: a CoarseClock
// running since before a bubble keeps reading the real time in it: an hour
// of the bubble's time.Sleep moves it by the little real time that passed.
func TestSynctestCoarseClockStartedOutsideKeepsTheRealTime(t *testing.T) {
	c := hotlimit.NewCoarseClock(time.Millisecond)
	c.Start()
	defer c.Stop()
	synctest.Test(t, func(t *testing.T) {
		before := c.Now()
		time.Sleep(time.Hour)
		assert.Less(t, c.Now()-before, int64(time.Hour), "an hour of fake time")
	})
}
