package tokenbucket

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// TestGuardSweepsFromTheHardSpanOn: a reading hard or more past the
// generation sweeps before it reads any word, and records itself as the
// generation; one nanosecond short of hard it does not (the background
// sweep it would start is held off here).
func TestGuardSweepsFromTheHardSpanOn(t *testing.T) {
	var now int64
	l := newGuardLimiter(t, 1, time.Second, 1, func() int64 { return now })
	now = l.hard - 1
	require.True(t, l.Take("k", 1).Allowed)
	assert.Zero(t, l.swept.Load(), "short of hard: no sweep before the read")
	now = l.hard
	require.True(t, l.Take("j", 1).Allowed)
	assert.Equal(t, l.hard, l.swept.Load(), "at hard: swept, and recorded")
}

// TestGuardStartsABackgroundSweepFromTheSoftSpanOn: a reading soft or more
// past the generation starts a sweep on its own goroutine; one nanosecond
// short of soft it does not. The background sweep, at the frozen clock,
// records soft when it completes, and only then clears sweeping.
func TestGuardStartsABackgroundSweepFromTheSoftSpanOn(t *testing.T) {
	var now int64
	l, err := New(1, time.Second, hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	now = l.soft - 1
	require.True(t, l.Take("k", 1).Allowed)
	assert.False(t, l.sweeping.Load(), "short of soft: no sweep started")
	assert.Zero(t, l.swept.Load())
	now = l.soft
	require.True(t, l.Take("j", 1).Allowed)
	started := l.sweeping.Load() || l.swept.Load() == l.soft // sweeping is cleared after the record
	assert.True(t, started, "at soft: a sweep started")
	for l.sweeping.Load() {
		runtime.Gosched()
	}
	if started {
		assert.Equal(t, l.soft, l.swept.Load())
	}
}

// TestGuardChecksAgainstTheGenerationAnotherSweepRecorded: when the sweep a
// reading hard past its generation runs is overtaken (another sweep
// completes during it and records its own time), the reading is checked
// again against that new generation, so that guard still returns a time
// and a generation with g − back ≤ t < g + hard: swept again when the new
// generation is still hard or more behind the reading, raised to g − back
// when it lies more than back ahead of it.
func TestGuardChecksAgainstTheGenerationAnotherSweepRecorded(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader func(l *Limiter) uint64 // the reading, at least hard past generation 0
		other  func(l *Limiter) uint64 // the overtaking sweep's time
		t, g   func(l *Limiter) int64  // what guard returns
	}{
		{
			"still hard behind",
			func(l *Limiter) uint64 { return uint64(2 * l.hard) },
			func(*Limiter) uint64 { return 1000 },
			func(l *Limiter) int64 { return 2 * l.hard },
			func(l *Limiter) int64 { return 2 * l.hard },
		},
		{
			"more than back ahead",
			func(l *Limiter) uint64 { return uint64(l.hard) },
			func(l *Limiter) uint64 { return uint64(l.hard + l.back + 1000) },
			func(l *Limiter) int64 { return l.hard + 1000 },
			func(l *Limiter) int64 { return l.hard + l.back + 1000 },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now int64
			l := newGuardLimiter(t, 1, time.Second, 1, func() int64 { return now })
			require.True(t, l.Allow("k")) // drained at 0: a word for the sweeps to load
			raced := false
			l.sweepLoaded = func() {
				if raced {
					return
				}
				raced = true
				l.sweep(tc.other(l))
				require.Equal(t, int64(tc.other(l)), l.swept.Load(), "the other sweep recorded its time")
			}
			gotT, gotG := l.guard(tc.reader(l), 0)
			require.True(t, raced)
			assert.Equal(t, tc.t(l), int64(gotT), "time")
			assert.Equal(t, tc.g(l), gotG, "generation")
			assert.True(t, gotG-l.back <= int64(gotT) && int64(gotT) < gotG+l.hard, "g − back ≤ t < g + hard")
		})
	}
}

// TestAdmissionFromAFullWordRaisedToTheFloor: an admission from a full word
// whose reading lies behind the floor that a judging sweep under way raised
// (to its time less Range/4, before its first visit, while the generation
// is still the old one) counts at the floor: the word is stamped the floor,
// and a receipt says the floor, by Allow as by Take.
func TestAdmissionFromAFullWordRaisedToTheFloor(t *testing.T) {
	for _, take := range []bool{false, true} {
		var now atomic.Int64
		l := newGuardLimiter(t, 1, 24*time.Hour, 2, now.Load)
		require.True(t, l.Take("busy", 2).Allowed) // drained at 0, generation 0
		s := l.hard - l.fill/2                     // a judging sweep: less than hard + fill past 0
		floor := s - l.back
		reading := floor - l.fill/4 // behind the floor, within Range/4 of generation 0
		require.Positive(t, reading)
		var at int64
		done := false
		l.sweepLoaded = func() {
			if done {
				return
			}
			done = true
			require.Equal(t, floor, l.floor.Load(), "raised before the first visit")
			require.Zero(t, l.swept.Load(), "not recorded yet")
			now.Store(reading)
			if take {
				d, r := l.TakeReceipt("fresh", 1)
				require.True(t, d.Allowed)
				at = r.At
			} else {
				require.True(t, l.Allow("fresh"))
			}
			stamp, partial := stampOf(l, "fresh")
			require.True(t, partial)
			want, _ := l.b.Units(uint64(floor))
			assert.Equal(t, want&(1<<l.b.TickBits-1), stamp, "take=%t: stamped the floor, not the reading", take)
		}
		now.Store(s)
		l.Sweep()
		require.True(t, done)
		if take {
			assert.Equal(t, floor, at, "the receipt says the floor (the epoch is 0)")
		}
	}
}
