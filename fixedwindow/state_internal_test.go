package fixedwindow

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestIndexAtTheEnds checks index against math/big floored division, at the
// ends of int64 time and around zero.
func TestIndexAtTheEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, window := range []time.Duration{MinWindow, MinWindow + 1, 1 << 20, 7 * time.Millisecond, time.Second, 1 << 54, MaxWindow} {
		l, err := New(1, window)
		require.NoError(t, err)
		w := int64(window)
		times := []int64{math.MinInt64, math.MinInt64 + 1, -w - 1, -w, -w + 1, -1, 0, 1, w - 1, w, w + 1,
			math.MaxInt64 - w, math.MaxInt64 - 1, math.MaxInt64}
		for range 100 {
			t := int64(rng.Uint64())
			times = append(times, t, t-t%w, t-t%w-1)
		}
		for _, now := range times {
			q, m := new(big.Int).DivMod(big.NewInt(now), big.NewInt(w), new(big.Int)) // Euclidean: floored for w > 0
			cur, rem := l.index(now)
			assert.Equal(t, q.Int64(), int64(cur), "window %d now %d", w, now)
			assert.Equal(t, m.Uint64(), rem, "window %d now %d", w, now)
		}
	}
}
