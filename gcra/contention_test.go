package gcra_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// TestDenialOnKeptReadingReadsAgain: a word that changed after the caller's
// clock reading (seen by its second load, or by a failed CAS) leaves it the
// reading, but a denial is never decided on it. At 1 per second, a key
// drained at 0 is asked at 2 s by A; between A's Load and its CAS, B takes
// the token at 2.5 s, and the clock moves to 3.5 s. On its kept reading (2 s)
// A would see the key empty; read again (3.5 s) the key holds a token, and A
// passes, as the model with A at 3.5 s does.
func TestDenialOnKeptReadingReadsAgain(t *testing.T) {
	var c limitertest.HookClock
	lim, err := gcra.New(1, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	c.Now.Store(int64(2 * time.Second))
	var b bool
	c.Hook = func() {
		c.Now.Store(int64(2500 * time.Millisecond))
		b = lim.Allow("k")
		c.Now.Store(int64(3500 * time.Millisecond))
	}
	assert.True(t, lim.Allow("k"), "A, read again at 3.5 s")
	assert.True(t, b, "B at 2.5 s")
	assert.Nil(t, c.Hook, "the hook ran, inside A's call")
	assert.Equal(t, hotlimit.Decision{Limit: 1, RetryAfter: time.Second, ResetAfter: time.Second}, lim.Take("k", 1))

	// The same through Take, whose Decision comes from the fresh reading.
	c.Now.Store(0)
	lim, err = gcra.New(1, time.Second, hotlimit.WithClock(c.Read))
	require.NoError(t, err)
	require.True(t, lim.Allow("k"))
	c.Now.Store(int64(2 * time.Second))
	c.Hook = func() {
		c.Now.Store(int64(2500 * time.Millisecond))
		b = lim.Allow("k")
		c.Now.Store(int64(3500 * time.Millisecond))
	}
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 1, ResetAfter: time.Second}, lim.Take("k", 1))
	assert.True(t, b)
}

// TestDenialAfterAFailedCASReadsAgain: a reading taken again for a denial
// is fresh only until the CAS it leads to fails; a denial of the word loaded
// after that failure reads the clock once more. At 1 per second, A asks for
// a fresh key at 0.5 s; while A reads the clock, B passes at 1.5 s (the key
// is empty until 2.5 s) and the clock moves to 2.7 s. A's second load sees
// B's write, which denies at 0.5 s, so A reads again: 2.7 s, where it would
// pass; meanwhile C passes at 2.8 s (empty until 3.8 s) and the clock moves
// to 4 s, so A's CAS fails. On the word it then loads, A's reading of 2.7 s
// would see the key empty and deny; read again, at 4 s, the key holds a
// token and A passes, as the model with A at 4 s does.
func TestDenialAfterAFailedCASReadsAgain(t *testing.T) {
	limitertest.DenialAfterAFailedCASReadsAgain(t, limitertest.FailedCASRace{
		New: func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
			return gcra.New(1, time.Second, hotlimit.WithClock(clock))
		},
		Model: func() limitertest.Model { return models.NewGCRA(1, 1, time.Second, 0).Take },
		First: 500 * time.Millisecond, B: 1500 * time.Millisecond, Second: 2700 * time.Millisecond,
		C: 2800 * time.Millisecond, Third: 4 * time.Second,
	})
}

// TestReportNeverJudgesAWordNewerThanItsReading: Take(key, 0) must not judge
// the key's word at a clock reading taken before a write it sees, where GCRA
// reads the key as emptier by the gap (as after a clock step back). At 5 per
// second, a fresh key is asked for its state at 1 s; while the report reads
// the clock (1 s), B takes a token at 2 s, so that a report that loads the
// word after its clock reading sees B's write. The report answers either the
// key before B at 1 s (5 left, full) or after B at 2 s (4 left, full 200 ms
// later); judged at 1 s after B's write, the key would read as empty, full
// only 1.2 s later, which it never was.
func TestReportNeverJudgesAWordNewerThanItsReading(t *testing.T) {
	limitertest.ReportNeverJudgesANewerWord(t, fivePerSecond(limitertest.ReportRace{
		ReportAt: time.Second,
		Other:    1, OtherAt: 2 * time.Second,
	}))
}

// TestReportSeesAWriteBeforeItsReading: Take(key, 0) must not judge the
// word it loaded at a clock reading that a write landing in between
// precedes. At 5 per second, a key that took 3 at 0 is asked for its state
// at 300 ms; between the report's load and its reading, B takes one at
// 100 ms. The key then has 2 left at 300 ms; the word loaded before B,
// judged at 300 ms, reads 3, a state the key never had.
func TestReportSeesAWriteBeforeItsReading(t *testing.T) {
	limitertest.ReportSeesAWriteBeforeItsReading(t, fivePerSecond(limitertest.ReportRace{
		First: 3, FirstAt: 0,
		ReportAt: 300 * time.Millisecond,
		Other:    1, OtherAt: 100 * time.Millisecond,
	}))
}

// TestReportSeesTheKeysNewCellAfterAKill: a sweep that kills the key's
// cell between a report's two loads, followed by a take that holds the key
// again in a new cell, sends the report back to the lookup. At 5 per
// second, a key that took 3 at 0 is full by 1 s; the report reads the clock
// at 1.1 s, and inside that reading, at 1 s, a Sweep evicts the key and B
// takes 2 from a new cell. The key then has 3 left at 1.1 s; the dead cell
// reads as a fresh key's 5.
func TestReportSeesTheKeysNewCellAfterAKill(t *testing.T) {
	limitertest.ReportSeesTheKeysNewCell(t, fivePerSecond(limitertest.ReportRace{
		First: 3, FirstAt: 0,
		ReportAt: 1100 * time.Millisecond,
		Other:    2, OtherAt: time.Second,
	}))
}

// fivePerSecond is r at 5 per second: the limiter under test and
// its sequential model.
func fivePerSecond(r limitertest.ReportRace) limitertest.ReportRace {
	r.Limit = 5
	r.New = func(clock hotlimit.Clock) (hotlimit.Limiter, error) {
		return gcra.New(5, time.Second, hotlimit.WithClock(clock))
	}
	r.Model = func() limitertest.Model { return models.NewGCRA(5, 5, time.Second, 0).Take }
	return r
}
