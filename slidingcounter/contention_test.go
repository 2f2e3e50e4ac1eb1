package slidingcounter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// TestDenialOnKeptReadingReadsAgain: a word that changed after the caller's
// clock reading (seen by its second load, or by a failed CAS) leaves it the
// reading, but a denial is never decided on it. At 2 per second, 2 pass at
// 0.1 s; A loads the word and reads 1.1 s; while A reads the clock, B
// passes at 1.1 s, and the clock moves to 1.9 s. On its kept reading A would
// weigh the previous window at ⌊2·0.9⌋ = 1 and see 1 + 1 + 1 > 2; read again,
// the weight is ⌊2·0.1⌋ = 0 and A passes, as the model with A at 1.9 s does.
func TestDenialOnKeptReadingReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		var c limitertest.HookClock
		lim, err := slidingcounter.New(2, time.Second, hotlimit.WithClock(c.Read))
		require.NoError(t, err)
		c.Now.Store(int64(100 * time.Millisecond))
		require.True(t, lim.Allow("k"))
		require.True(t, lim.Allow("k"))
		c.Now.Store(int64(1100 * time.Millisecond))
		var b bool
		c.Hook = func() {
			b = lim.Allow("k")
			c.Now.Store(int64(1900 * time.Millisecond))
		}
		if take {
			d := lim.Take("k", 1)
			assert.True(t, d.Allowed, "A, read again at 1.9 s")
			assert.Zero(t, d.Remaining)
		} else {
			assert.True(t, lim.Allow("k"), "A, read again at 1.9 s")
		}
		assert.True(t, b, "B at 1.1 s")
		assert.Nil(t, c.Hook, "the hook ran, inside A's call")
		assert.False(t, lim.Allow("k"), "2 counted in window 1")
	}
}

// TestDenialAfterAFailedCASReadsAgain: a reading taken again for a denial
// is fresh only until the CAS it leads to fails; a denial of the word loaded
// after that failure reads the clock once more. At 1 per second, A loads a
// fresh key's word and reads the clock at 0.5 s; meanwhile B passes at
// 1.5 s and the clock moves to 2.5 s, so A's CAS fails. On B's word, in a
// later window, A's kept reading would deny, so A reads again: 2.5 s, where
// B's request weighs ⌊1·0.5⌋ = 0 and A would pass; meanwhile C passes at
// 3.5 s and the clock moves to 4.9 s, so A's CAS fails again. On C's word,
// window 3, A's reading of 2.5 s is behind again: judged there, A would be
// denied; read again, at 4.9 s, C's request weighs ⌊1·0.1⌋ = 0 and A passes,
// as the model with A at 4.9 s does.
func TestDenialAfterAFailedCASReadsAgain(t *testing.T) {
	limitertest.DenialAfterAFailedCASReadsAgain(t, limitertest.FailedCASRace{
		New: func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return slidingcounter.New(1, time.Second, hotlimit.WithClock(clock))
		},
		Model: func() limitertest.Model { return models.NewSlidingCounter(1, time.Second).Take },
		First: 500 * time.Millisecond, B: 1500 * time.Millisecond, Second: 2500 * time.Millisecond,
		C: 3500 * time.Millisecond, Third: 4900 * time.Millisecond,
	})
}

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > limit or n < 0) must not judge the key's word at a clock reading taken
// before a write it sees, where the word's window is ahead of the reading's
// (as after a clock step back): prev then weighs in full, and ResetAfter
// runs to the key's reset from the older reading. At 3 per second, a key
// that passed one request at 0.5 s is asked for its state at 0.9 s; while
// the report reads the clock (0.9 s), B takes 2 at 1.9 s, in the next
// window, so that a report that loads the word after its clock reading sees
// B's write. The report answers as the model does either before B at 0.9 s
// (2 left, reset just after 1 s) or after B at 1.9 s (1 left, reset just
// after 2.5 s); judged at 0.9 s after B's write, the key would have none
// left, which it never had, and its reset just after 2.5 s would be 1.6 s
// away, a second past the time it was.
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
// second, a key that passed one request at 0.5 s weighs nothing from 2 s
// on; the report reads the clock at 2.5 s, and inside that reading, at
// 2.1 s, a Sweep evicts the key and B takes one in a new cell. The key then
// has 2 left at 2.5 s; the dead cell reads as a fresh key's 3.
func TestReportSeesTheKeysNewCellAfterAKill(t *testing.T) {
	limitertest.ReportSeesTheKeysNewCell(t, threePerSecond(limitertest.ReportRace{
		First: 1, FirstAt: 500 * time.Millisecond,
		ReportAt: 2500 * time.Millisecond,
		Other:    1, OtherAt: 2100 * time.Millisecond,
	}))
}

// threePerSecond is r at 3 per second: the limiter under test and
// its sequential model.
func threePerSecond(r limitertest.ReportRace) limitertest.ReportRace {
	r.Limit = 3
	r.New = func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
		return slidingcounter.New(3, time.Second, hotlimit.WithClock(clock))
	}
	r.Model = func() limitertest.Model { return models.NewSlidingCounter(3, time.Second).Take }
	return r
}

// TestDenialOnAnUntouchedWordReadsTheClockOnce: a call whose word no one
// writes during it reads the clock once, its reading taken after the word
// it judges, even to deny: the second load of the word, after the reading,
// finds it unchanged and leaves the reading fresh. Allow, Take and
// AllowRemaining on a drained key, at 1 per second.
func TestDenialOnAnUntouchedWordReadsTheClockOnce(t *testing.T) {
	reads := 0
	lim, err := slidingcounter.New(1, time.Second, hotlimit.WithClock(func() int64 {
		reads++
		return int64(500 * time.Millisecond)
	}))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	for _, call := range []struct {
		name string
		deny func() bool
	}{
		{"Allow", func() bool { return !lim.Allow("k") }},
		{"Take", func() bool { return !lim.Take("k", 1).Allowed }},
		{"AllowRemaining", func() bool { ok, _ := lim.AllowRemaining("k"); return !ok }},
	} {
		reads = 0
		require.True(t, call.deny(), call.name)
		assert.Equal(t, 1, reads, "%s: clock reads of a denial", call.name)
	}
}
