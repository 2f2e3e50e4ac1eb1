package fixedwindow_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestDenialOnStaleReadingReadsAgain: the clock is read before the word,
// but a denial is never decided on a reading behind the stored window. At 1
// per second, A reads the clock at 0.9 s; before A loads the word, B passes
// at 1.1 s (window 1, now full) and the clock moves to 2.1 s. On its reading
// (window 0) A would count against B's full window; read again, it starts
// window 2 and passes, as the model with A at 2.1 s does.
func TestDenialOnStaleReadingReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c limitertest.HookClock
		lim, err := fixedwindow.New(1, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		c.Now.Store(int64(900 * time.Millisecond))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(1100 * time.Millisecond))
			b = lim.Allow("k")
			c.Now.Store(int64(2100 * time.Millisecond))
		}
		if take {
			assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1), "A, read again at 2.1 s")
		} else {
			assert.True(t, lim.Allow("k"), "A, read again at 2.1 s")
		}
		assert.True(t, b, "B at 1.1 s")
		assert.Nil(t, c.Hook, "the hook ran, inside A's call")
		assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: 900 * time.Millisecond, ResetAfter: 900 * time.Millisecond}, lim.Take("k", 1))
	}
}

// TestDenialAfterAFailedCASReadsAgain: a reading taken again for a denial
// is fresh only until the CAS it leads to fails; a denial of the word loaded
// after that failure reads the clock once more. At 1 per second, A reads the
// clock at 0.5 s; meanwhile B fills window 1 at 1.5 s. A finds the word full
// in a later window and reads again: 2.5 s, window 2, where it would pass;
// meanwhile C fills window 3 at 3.5 s and the clock moves to 4.5 s, so A's
// CAS fails. On the word it then loads, window 3 full, A's reading of 2.5 s
// is behind again: judged there, A would be denied; read again, at 4.5 s,
// A starts window 4 and passes, as the model with A at 4.5 s does.
func TestDenialAfterAFailedCASReadsAgain(t *testing.T) {
	limitertest.DenialAfterAFailedCASReadsAgain(t, limitertest.FailedCASRace{
		New: func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return fixedwindow.New(1, time.Second, hotlimit.WithClock(clock))
		},
		Model: func() limitertest.Model { return models.NewFixedWindow(1, time.Second).Take },
		First: 500 * time.Millisecond, B: 1500 * time.Millisecond, Second: 2500 * time.Millisecond,
		C: 3500 * time.Millisecond, Third: 4500 * time.Millisecond,
	})
}

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > limit or n < 0) must not judge the key's word at a clock reading taken
// before a write it sees, where the word's window is ahead of the reading's
// (as after a clock step back) and ResetAfter runs to the end of that later
// window, measured from the older reading. At 3 per second, a key that
// passed one request at 0.5 s is asked for its state at 0.9 s; while the
// report reads the clock (0.9 s), B takes 2 at 1.9 s, in the next window, so
// that a report that loads the word after its clock reading sees B's write.
// The report answers as the model does either before B at 0.9 s (2 left,
// reset 100 ms later) or after B at 1.9 s (1 left, reset 100 ms later);
// judged at 0.9 s after B's write, the key would reset only 1.1 s later,
// nearly a window past the time it did.
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	limitertest.ReportNeverJudgesANewerWord(t, threePerSecond(limitertest.ReportRace{
		First: 1, FirstAt: 500 * time.Millisecond,
		ReportAt: 900 * time.Millisecond,
		Other:    2, OtherAt: 1900 * time.Millisecond,
	}))
}

// TestReportSeesAWriteBeforeItsReading: Take(key, 0) must not judge the
// word it loaded at a clock reading that a write landing in between
// precedes. At 3 per second, a key that passed one request at 0.5 s is
// asked for its state at 0.9 s; between the report's load and its reading,
// B takes one at 0.6 s. The key then has 1 left; the word loaded before B
// reads 2, a count the window no longer had at the reading.
func TestReportSeesAWriteBeforeItsReading(t *testing.T) {
	limitertest.ReportSeesAWriteBeforeItsReading(t, threePerSecond(limitertest.ReportRace{
		First: 1, FirstAt: 500 * time.Millisecond,
		ReportAt: 900 * time.Millisecond,
		Other:    1, OtherAt: 600 * time.Millisecond,
	}))
}

// TestReportSeesTheKeysNewCellAfterAKill: a sweep that kills the key's
// cell between a report's two loads, followed by a take that holds the key
// again in a new cell, sends the report back to the lookup. At 3 per
// second, a key that passed one request at 0.5 s is idle once its window
// ends; the report reads the clock at 1.5 s, and inside that reading, at
// 1.2 s, a Sweep evicts the key and B takes one in a new cell. The key then
// has 2 left in the window of 1.5 s; the dead cell reads as a fresh key's 3.
func TestReportSeesTheKeysNewCellAfterAKill(t *testing.T) {
	limitertest.ReportSeesTheKeysNewCell(t, threePerSecond(limitertest.ReportRace{
		First: 1, FirstAt: 500 * time.Millisecond,
		ReportAt: 1500 * time.Millisecond,
		Other:    1, OtherAt: 1200 * time.Millisecond,
	}))
}

// threePerSecond is r at 3 per second: the limiter under test and
// its sequential model.
func threePerSecond(r limitertest.ReportRace) limitertest.ReportRace {
	r.Limit = 3
	r.New = func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
		return fixedwindow.New(3, time.Second, hotlimit.WithClock(clock))
	}
	r.Model = func() limitertest.Model { return models.NewFixedWindow(3, time.Second).Take }
	return r
}
