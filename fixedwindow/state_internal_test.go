package fixedwindow

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"

	"github.com/hotlimit/hotlimit/internal/packed"
)

func TestFreshIsTheZeroWord(t *testing.T) {
	assert.Equal(t, packed.PackWindow(0, 0), fresh)
	assert.Equal(t, fresh, newCell().word.Load())
}

// TestAdvanceFreshTakesTheCurrentWindow: a zero count is fresh whatever its
// index, even when packed.Advance would read the index as ahead of the clock
// (the zero word at a negative clock).
func TestAdvanceFreshTakesTheCurrentWindow(t *testing.T) {
	minus2 := uint64(math.MaxUint64 - 1) // window −2
	index, count, behind := advance(fresh, minus2)
	assert.Equal(t, minus2, index)
	assert.Zero(t, count)
	assert.Zero(t, behind)
	_, _, behind = packed.Advance(0, 0, minus2)
	assert.EqualValues(t, 2, behind, "packed.Advance alone would keep window 0")
}

func TestKill(t *testing.T) {
	c := newCell()
	assert.True(t, c.kill(5), "a fresh cell is idle")
	assert.True(t, c.kill(5), "dead already: reported dead, for the sweeper to delete")
	for i, tc := range []struct {
		index, count, cur uint64
		idle              bool
	}{
		{4, 1, 5, true},
		{5, 1, 5, false},
		{6, 1, 5, false},                     // a later window: the clock stepped back
		{1<<42 - 1, 3, 0, true},              // window −1 read at window 0, mod 2^42
		{0, 3, 1<<42 - 1, false},             // window 0 read at window −1
		{7, 0, 2, true},                      // zero count
		{2, packed.MaxWindowLimit, 2, false}, // full current window
	} {
		c := newCell()
		c.word.Store(packed.PackWindow(tc.index, tc.count))
		assert.Equal(t, tc.idle, c.kill(tc.cur), "case %d", i)
		if tc.idle {
			assert.Equal(t, packed.WindowDead, c.word.Load(), "case %d", i)
		}
	}
}

// TestReportOfADeadCellStillMapped: a cell killed (by a Sweep, or a Refund
// that emptied its window) but not yet deleted from the map reports as the
// fresh key that replaces it: the whole limit remaining, no reset, for
// Take(key, 0) and for a Take above the limit; a report writes nothing, and
// the next admission revives a fresh cell. Also at a clock before the
// origin, where the tombstone's index, all ones, is the current window.
func TestReportOfADeadCellStillMapped(t *testing.T) {
	for _, now := range []int64{int64(2*time.Hour + 300*time.Millisecond), int64(-700 * time.Millisecond)} {
		l, err := New(3, time.Second, hotlimit.WithClock(func() int64 { return now }))
		require.NoError(t, err)
		require.True(t, l.Allow("k"))
		require.True(t, l.Allow("k"))
		c, held := l.cells.Peek("k")
		require.True(t, held)
		c.word.Store(packed.WindowDead) // killed; its deletion yet to land

		d := l.Take("k", 0)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 3}, d, "now %d", now)
		d = l.Take("k", 4)
		assert.Equal(t, hotlimit.Decision{Limit: 3, Remaining: 3, RetryAfter: hotlimit.Never}, d, "now %d", now)
		assert.Equal(t, packed.WindowDead, c.word.Load(), "a report writes nothing")

		// 300 ms into a window of 1 s: it resets in 700 ms.
		d = l.Take("k", 1)
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 3, Remaining: 2, ResetAfter: 700 * time.Millisecond}, d, "now %d", now)
	}
}
