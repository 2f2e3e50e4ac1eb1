package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

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
