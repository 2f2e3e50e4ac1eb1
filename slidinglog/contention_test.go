package slidinglog_test

import (
	"testing"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// TestReportNeverJudgesAWordNewerThanItsReading: a report (Take with n = 0,
// n > limit or n < 0) must not judge the key's log at a clock reading taken
// before a request it sees, logged at a later time: the log is then judged
// at that newest time, as after a clock step back, and ResetAfter runs to
// its expiry from the older reading. At 3 per second, a key that passed one
// request at 0.1 s (or none yet: a key not held) is asked for its state at
// 0.5 s; while the report reads the clock (0.5 s), B takes one at 0.8 s, so
// that a report that reads the log after its clock reading sees B's
// request. The report answers as the model does either before B at 0.5 s
// (2 left, reset 600 ms later; or full) or after B at 0.8 s (1 left, reset
// a second later; or 2 left); judged at 0.5 s after B's request, the key's
// reset would be 1.3 s away, 300 ms past the time it was. (A report of a key
// not held reads no clock, where B could land: B then comes after it.)
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	for _, first := range []int{1, 0} { // a key held, and one not held
		limitertest.ReportNeverJudgesANewerWord(t, threePerSecond(limitertest.ReportRace{
			First: first, FirstAt: 100 * time.Millisecond,
			ReportAt: 500 * time.Millisecond,
			Other:    1, OtherAt: 800 * time.Millisecond,
		}))
	}
}

// TestReportSeesAWriteBeforeItsReading: Take(key, 0) must not judge the log
// it read at a clock reading that a request logged in between precedes. At
// 3 per second, a key that passed one request at 0.1 s is asked for its
// state at 0.5 s; between the report's reading of the log and its clock
// reading, B takes one at 0.3 s. The key then has 1 left; the log read
// before B holds 2.
func TestReportSeesAWriteBeforeItsReading(t *testing.T) {
	limitertest.ReportSeesAWriteBeforeItsReading(t, threePerSecond(limitertest.ReportRace{
		First: 1, FirstAt: 100 * time.Millisecond,
		ReportAt: 500 * time.Millisecond,
		Other:    1, OtherAt: 300 * time.Millisecond,
	}))
}

// threePerSecond is r at 3 per second: the limiter under test and
// its sequential model.
func threePerSecond(r limitertest.ReportRace) limitertest.ReportRace {
	r.Limit = 3
	r.New = func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
		return slidinglog.New(3, time.Second, hotlimit.WithClock(clock))
	}
	r.Model = func() limitertest.Model { return models.NewSlidingLog(3, time.Second).Clamped(0).Take }
	return r
}
