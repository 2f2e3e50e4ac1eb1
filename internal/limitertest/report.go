package limitertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// ReportRace is the scenario of ReportNeverJudgesANewerWord.
type ReportRace struct {
	Limit int // the reports are Take(key, n) for n = 0, Limit + 1 and -1
	// New returns the limiter under test, reading clock, and Model a
	// fresh model of the same policy (a method value such as
	// models.NewFixedWindow(3, time.Second).Take).
	New   func(clock hotlimit.Clock) (hotlimit.Limiter, error)
	Model func() Model
	// Before the report, First requests are taken at FirstAt (none when
	// First is 0: a key not held). The report reads ReportAt; inside that
	// reading, B takes Other at OtherAt.
	First    int
	FirstAt  time.Duration
	ReportAt time.Duration
	Other    int
	OtherAt  time.Duration
}

// ReportNeverJudgesANewerWord forces a take inside a report's clock
// reading: the report (Take(key, n) for n = 0, Limit + 1 and -1, which
// reads the key's state and changes nothing) reads the clock at ReportAt,
// and inside that reading B takes Other at OtherAt, a later time. The
// report must answer as the model does at a time of its call with the
// calls in an order they could have taken effect: before B, at ReportAt,
// or after B, at OtherAt. A report that loads the key's state after its
// clock reading sees B's write and judges it at the older reading, a state
// the key never had. The scenario must tell the two apart: the model's
// answers before and after B differ.
func ReportNeverJudgesANewerWord(t *testing.T, r ReportRace) {
	t.Helper()
	for _, n := range []int{0, r.Limit + 1, -1} {
		var c HookClock
		lim, err := r.New(c.Read)
		require.NoError(t, err)
		m := r.Model()
		if r.First > 0 {
			c.Now.Store(int64(r.FirstAt))
			require.True(t, lim.Take("k", r.First).Allowed, "n = %d: the first take", n)
			require.True(t, m("k", r.First, int64(r.FirstAt)).Allowed, "n = %d: the model's first take", n)
		}
		c.Now.Store(int64(r.ReportAt))
		before := m("k", n, int64(r.ReportAt))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(r.OtherAt))
			b = lim.Take("k", r.Other).Allowed
		}
		d := lim.Take("k", n)
		if c.Hook != nil {
			// The report read no clock (a key not held reports as
			// fresh whatever the time): B comes after it.
			c.Read()
		}
		require.True(t, b, "n = %d: B at %v", n, r.OtherAt)
		require.True(t, m("k", r.Other, int64(r.OtherAt)).Allowed, "n = %d: the model's B", n)
		after := m("k", n, int64(r.OtherAt))
		require.NotEqual(t, before, after, "n = %d: the scenario tells before B from after it", n)
		assert.Contains(t, []hotlimit.Decision{before, after}, d,
			"n = %d: the key before B's take at %v, or after it at %v", n, r.ReportAt, r.OtherAt)
	}
}

// ReportSeesAWriteBeforeItsReading forces a take between a report's load of
// the key's state and its clock reading: the report (Take(key, n) for n = 0,
// Limit + 1 and -1) reads the clock at ReportAt, and inside that reading,
// before it returns, B takes Other at OtherAt, an earlier time. B's write
// was the key's state at the report's reading, so the report must answer as
// the model does after B, at ReportAt: judged at ReportAt, the state the
// report loaded before B is one the key never had then. First must be
// positive (a key held: a key not held reports as fresh, which is the same
// at any time), and the scenario must tell the two apart.
func ReportSeesAWriteBeforeItsReading(t *testing.T, r ReportRace) {
	t.Helper()
	require.Positive(t, r.First, "the key is held before the report")
	require.Less(t, r.FirstAt, r.OtherAt, "B comes after the first take")
	require.Less(t, r.OtherAt, r.ReportAt, "B's reading is earlier than the report's")
	for _, n := range []int{0, r.Limit + 1, -1} {
		var c HookClock
		lim, err := r.New(c.Read)
		require.NoError(t, err)
		m, without := r.Model(), r.Model()
		c.Now.Store(int64(r.FirstAt))
		require.True(t, lim.Take("k", r.First).Allowed, "n = %d: the first take", n)
		require.True(t, m("k", r.First, int64(r.FirstAt)).Allowed, "n = %d: the model's first take", n)
		without("k", r.First, int64(r.FirstAt))
		c.Now.Store(int64(r.ReportAt))
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(r.OtherAt))
			b = lim.Take("k", r.Other).Allowed
			c.Now.Store(int64(r.ReportAt))
		}
		d := lim.Take("k", n)
		require.Nil(t, c.Hook, "n = %d: the report read the clock", n)
		require.True(t, b, "n = %d: B at %v", n, r.OtherAt)
		require.True(t, m("k", r.Other, int64(r.OtherAt)).Allowed, "n = %d: the model's B", n)
		want := m("k", n, int64(r.ReportAt))
		require.NotEqual(t, without("k", n, int64(r.ReportAt)), want, "n = %d: the scenario tells the key with B from the key without it", n)
		assert.Equal(t, want, d, "n = %d: the key after B's take at %v, at the report's reading %v", n, r.OtherAt, r.ReportAt)
	}
}

// ReportSeesTheKeysNewCell forces a sweep's kill and a re-insert of the key
// between a report's two loads of the key's state: the key took First at
// FirstAt and is idle by OtherAt; the report (Take(key, n) for n = 0,
// Limit + 1 and -1) loads its state and reads the clock at ReportAt, and
// inside that reading, at OtherAt, a Sweep evicts the key and B takes Other,
// which holds the key again in a new cell. The report's second load finds
// the old cell dead: it must look the key up again and answer as the model
// does after B, at ReportAt, not as for a fresh key, which the old, dead
// cell reads as. New's limiter must have a Sweep method, and the scenario
// must tell the key after B from a fresh one.
func ReportSeesTheKeysNewCell(t *testing.T, r ReportRace) {
	t.Helper()
	require.Positive(t, r.First, "the key is held before the report")
	require.Less(t, r.FirstAt, r.OtherAt, "B comes after the first take")
	require.LessOrEqual(t, r.OtherAt, r.ReportAt, "B's reading is no later than the report's")
	for _, n := range []int{0, r.Limit + 1, -1} {
		var c HookClock
		l, err := r.New(c.Read)
		require.NoError(t, err)
		lim, ok := l.(interface {
			hotlimit.Limiter
			Sweep() int
		})
		require.True(t, ok, "the limiter has a Sweep method")
		m, fresh := r.Model(), r.Model()
		c.Now.Store(int64(r.FirstAt))
		require.True(t, lim.Take("k", r.First).Allowed, "n = %d: the first take", n)
		require.True(t, m("k", r.First, int64(r.FirstAt)).Allowed, "n = %d: the model's first take", n)
		c.Now.Store(int64(r.ReportAt))
		var swept int
		var b bool
		c.Hook = func() {
			c.Now.Store(int64(r.OtherAt))
			swept = lim.Sweep()
			b = lim.Take("k", r.Other).Allowed
			c.Now.Store(int64(r.ReportAt))
		}
		d := lim.Take("k", n)
		require.Nil(t, c.Hook, "n = %d: the report read the clock", n)
		require.Equal(t, 1, swept, "n = %d: the sweep at %v evicts the key", n, r.OtherAt)
		require.True(t, b, "n = %d: B at %v", n, r.OtherAt)
		require.True(t, m("k", r.Other, int64(r.OtherAt)).Allowed, "n = %d: the model's B", n)
		want := m("k", n, int64(r.ReportAt))
		require.NotEqual(t, fresh("k", n, int64(r.ReportAt)), want, "n = %d: the scenario tells the key after B from a fresh key", n)
		assert.Equal(t, want, d, "n = %d: the key in its new cell after B's take at %v, at the report's reading %v", n, r.OtherAt, r.ReportAt)
	}
}
