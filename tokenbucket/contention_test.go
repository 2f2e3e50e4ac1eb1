package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// TestDenialBehindALaterWriteReadsAgain: a caller reads the clock before
// it loads the word, so another call may write the word in between, at a
// later reading; judged at the older reading, which refills nothing, the
// key looks emptier than it is now, and a denial is never decided there. At
// 1 per second, a key drained at 0 is asked at 2 s by A; while A reads the
// clock, B takes the refilled token at 2.5 s and the clock moves to 3.5 s.
// On its reading (2 s) A would see the key empty and be told to wait until
// 3.5 s, which has come; read again (3.5 s) the key holds a token, and A
// passes, as the model with A at 3.5 s does. Then the same again, with a
// second write landing while A reads the clock again: C takes the token at
// 3.6 s and the clock moves to 5 s, where A passes. And when the clock
// really is behind the key's latest write, A, having read it again, is
// denied with the waits from its reading.
func TestDenialBehindALaterWriteReadsAgain(t *testing.T) {
	for _, take := range []bool{false, true} {
		t.Run(map[bool]string{false: "Allow", true: "Take"}[take], func(t *testing.T) {
			// A's call: Take's whole Decision, or Allow's answer.
			check := func(lim *tokenbucket.Limiter, want hotlimit.Decision, msg string) {
				t.Helper()
				if take {
					assert.Equal(t, want, lim.Take("k", 1), msg)
				} else {
					assert.Equal(t, want.Allowed, lim.Allow("k"), msg)
				}
			}
			var c limitertest.HookClock
			lim, err := tokenbucket.New(1, time.Second, hotlimit.WithClock(c.Read))
			require.NoError(t, err)
			require.True(t, lim.Allow("k"), "drained at 0")
			c.Now.Store(int64(2 * time.Second))
			var b bool
			c.Hook = func() { // A's reading: 2 s
				c.Now.Store(int64(2500 * time.Millisecond))
				b = lim.Allow("k")
				c.Now.Store(int64(3500 * time.Millisecond))
			}
			check(lim, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second}, "A, read again at 3.5 s")
			require.True(t, b, "B at 2.5 s")
			require.Nil(t, c.Hook, "the hook ran, inside A's call")
			assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: time.Second, ResetAfter: time.Second}, lim.Take("k", 1))

			// Twice: a write lands inside each of A's readings.
			c.Now.Store(0)
			lim, err = tokenbucket.New(1, time.Second, hotlimit.WithClock(c.Read))
			require.NoError(t, err)
			require.True(t, lim.Allow("k"), "drained at 0")
			c.Now.Store(int64(2 * time.Second))
			var cc bool
			c.Hook = func() { // A's first reading: 2 s
				c.Now.Store(int64(2500 * time.Millisecond))
				b = lim.Allow("k")
				c.Now.Store(int64(3500 * time.Millisecond))
				c.Hook = func() { // A's second reading: 3.5 s
					c.Now.Store(int64(3600 * time.Millisecond))
					cc = lim.Allow("k")
					c.Now.Store(int64(5 * time.Second))
				}
			}
			check(lim, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second}, "A, read again at 5 s")
			require.True(t, b, "B at 2.5 s")
			require.True(t, cc, "C at 3.6 s")
			require.Nil(t, c.Hook, "both hooks ran, inside A's call")

			// A clock stepped back behind the latest write (A's, at 5 s):
			// read again, it is still behind, and the key is denied with the
			// waits from that reading.
			c.Now.Store(int64(4500 * time.Millisecond))
			check(lim, hotlimit.Decision{Limit: 1, RetryAfter: 1500 * time.Millisecond, ResetAfter: 1500 * time.Millisecond},
				"at 4.5 s, behind the key's write at 5 s")
		})
	}
}

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > burst or n < 0) must not judge the key's word at a clock reading taken
// before a write it sees, where the word's timestamp is ahead of the reading
// (as after a clock step back) and every wait is measured from the older
// reading. At 5 per second, a key that took 3 tokens at 0 is asked for its
// state at 200 ms; while the report reads the clock (200 ms), B takes a token
// at 500 ms, so that a report that loads the word after its clock reading
// sees B's write. The report answers as the model does either before B at
// 200 ms (3 left, full 400 ms later) or after B at 500 ms (3.5 left, full
// 300 ms later); judged at 200 ms after B's write, the key would be full only
// 600 ms later, 300 ms past the time it was.
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	limitertest.ReportNeverJudgesANewerWord(t, fivePerSecond(limitertest.ReportRace{
		First: 3, FirstAt: 0,
		ReportAt: 200 * time.Millisecond,
		Other:    1, OtherAt: 500 * time.Millisecond,
	}))
}

// TestReportSeesAWriteBeforeItsReading: Take(key, 0) must not judge the
// word it loaded at a clock reading that a write landing in between
// precedes. At 5 per second, a key that took 3 tokens at 0 is asked for its
// state at 500 ms; between the report's load and its reading, B takes a
// token at 200 ms. The key then holds 3.5 tokens at 500 ms; the word loaded
// before B, judged at 500 ms, reads 4.5, a state the key never had.
func TestReportSeesAWriteBeforeItsReading(t *testing.T) {
	limitertest.ReportSeesAWriteBeforeItsReading(t, fivePerSecond(limitertest.ReportRace{
		First: 3, FirstAt: 0,
		ReportAt: 500 * time.Millisecond,
		Other:    1, OtherAt: 200 * time.Millisecond,
	}))
}

// TestReportSeesTheKeysNewCellAfterAKill: a sweep that kills the key's
// cell between a report's two loads, followed by a take that holds the key
// again in a new cell, sends the report back to the lookup. At 5 per
// second, a key that took 3 tokens at 0 is full by 1 s; the report reads
// the clock at 1.1 s, and inside that reading, at 1 s, a Sweep evicts the
// key and B takes 1 token from a new cell. The key then holds 4.5 tokens at
// 1.1 s; the dead cell reads as a fresh key's 5.
func TestReportSeesTheKeysNewCellAfterAKill(t *testing.T) {
	limitertest.ReportSeesTheKeysNewCell(t, fivePerSecond(limitertest.ReportRace{
		First: 3, FirstAt: 0,
		ReportAt: 1100 * time.Millisecond,
		Other:    1, OtherAt: time.Second,
	}))
}

// fivePerSecond is r at 5 per second: the limiter under test and
// its sequential model.
func fivePerSecond(r limitertest.ReportRace) limitertest.ReportRace {
	r.Limit = 5
	r.New = func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
		return tokenbucket.New(5, time.Second, hotlimit.WithClock(clock))
	}
	r.Model = func() limitertest.Model { return models.NewTokenBucket(5, 5, time.Second, 0).Take }
	return r
}
