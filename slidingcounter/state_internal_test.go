package slidingcounter

import (
	"math"
	"math/big"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/packed"
)

func TestFreshIsTheZeroWord(t *testing.T) {
	assert.Equal(t, pack(0, 0, 0), fresh)
	assert.Equal(t, fresh, newCell().word.Load())
}

func TestDeadIsNoLiveWord(t *testing.T) {
	_, prev, cur := unpack(dead)
	assert.Greater(t, cur, uint64(MaxLimit), "no live cur reaches the tombstone's")
	assert.Greater(t, prev, uint64(MaxLimit))
	assert.NotEqual(t, dead, pack(indexMask, MaxLimit, MaxLimit))
}

// FuzzPack: every index, and every pair of counts in [0, MaxLimit], round
// trips through one word, and no field leaks into another.
func FuzzPack(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0))
	f.Add(uint64(indexMask), uint64(MaxLimit), uint64(MaxLimit))
	f.Add(uint64(math.MaxUint64), uint64(1), uint64(MaxLimit))
	f.Add(uint64(1<<29), uint64(65536), uint64(0))
	f.Fuzz(func(t *testing.T, index, prev, cur uint64) {
		prev %= MaxLimit + 1
		cur %= MaxLimit + 1
		w := pack(index, prev, cur)
		i, p, c := unpack(w)
		require.Equal(t, index&indexMask, i)
		require.Equal(t, prev, p)
		require.Equal(t, cur, c)
		require.NotEqual(t, dead, w)
		require.Equal(t, w, pack(i, p, c))
	})
}

func TestAdvance(t *testing.T) {
	for i, tc := range []struct {
		index, prev, count, cur uint64
		want                    [4]uint64 // index, prev, count, behind
	}{
		{0, 0, 0, 1<<64 - 2, [4]uint64{indexMask - 1, 0, 0, 0}}, // fresh at window −2
		{5, 2, 3, 5, [4]uint64{5, 2, 3, 0}},                     // same window
		{5, 2, 3, 6, [4]uint64{6, 3, 0, 0}},                     // next: cur becomes prev
		{5, 2, 3, 7, [4]uint64{7, 0, 0, 0}},                     // two later: both zero
		{5, 2, 3, 5 + half - 1, [4]uint64{5 + half - 1, 0, 0, 0}},
		{5, 2, 3, 5 + half, [4]uint64{5, 2, 3, half}}, // reads as ahead
		{5, 2, 3, 4, [4]uint64{5, 2, 3, 1}},           // the clock stepped back
		{indexMask, 0, 1, 1 << 30, [4]uint64{0, 1, 0, 0}},
		{0, 4, 1, 1<<64 - 1, [4]uint64{0, 4, 1, 1}}, // window 0 read at window −1
	} {
		index, prev, count, behind := advance(pack(tc.index, tc.prev, tc.count), tc.cur)
		assert.Equal(t, tc.want, [4]uint64{index, prev, count, behind}, "case %d", i)
	}
}

func TestKill(t *testing.T) {
	c := newCell()
	assert.True(t, c.kill(5), "a fresh cell is idle")
	assert.True(t, c.kill(5), "dead already: reported dead, for the sweeper to delete")
	for i, tc := range []struct {
		index, prev, count, cur uint64
		idle                    bool
	}{
		{3, 1, 1, 5, true},
		{4, 1, 1, 5, false}, // cur is now prev
		{5, 1, 1, 5, false},
		{6, 1, 1, 5, false},                      // a later window: the clock stepped back
		{indexMask - 1, 3, 3, 0, true},           // window −2 read at window 0, mod 2^30
		{indexMask, 3, 3, 0, false},              // window −1 read at window 0
		{0, 0, 3, indexMask, false},              // window 0 read at window −1
		{2, MaxLimit, MaxLimit, 2, false},        // full current window
		{2, MaxLimit, MaxLimit, 2 + half, false}, // reads as ahead
	} {
		c := newCell()
		c.word.Store(pack(tc.index, tc.prev, tc.count))
		assert.Equal(t, tc.idle, c.kill(tc.cur), "case %d", i)
		if tc.idle {
			assert.Equal(t, dead, c.word.Load(), "case %d", i)
		}
	}
}

// FuzzEstimate checks weigh, fits and span against math/big across the
// documented ranges, the 72-bit products included.
func FuzzEstimate(f *testing.F) {
	f.Add(int64(MaxWindow), uint64(MaxLimit), uint64(MaxLimit), uint64(0), uint64(0), uint64(1))
	f.Add(int64(MinWindow), uint64(1), uint64(1), uint64(0), uint64(999999), uint64(1))
	f.Add(int64(time.Second), uint64(10), uint64(10), uint64(3), uint64(500000000), uint64(4))
	f.Fuzz(func(t *testing.T, window int64, limit, prev, count, e, n uint64) {
		w := uint64(MinWindow) + uint64(window)%uint64(MaxWindow-MinWindow+1)
		limit = 1 + limit%MaxLimit
		prev %= limit + 1
		count %= limit + 1
		n = 1 + n%limit
		e %= w
		l, err := New(int(limit), time.Duration(w))
		require.NoError(t, err)
		x := new(big.Int).Mul(new(big.Int).SetUint64(prev), new(big.Int).SetUint64(w-e))
		x.Quo(x, new(big.Int).SetUint64(w))
		require.Equal(t, x.Uint64(), l.weigh(prev, e))
		require.Equal(t, x.Uint64()+count+n <= limit, l.fits(prev, count, e, n))
		if a := min(count, prev-1); prev > 0 {
			s := l.span(prev, a)
			require.Less(t, s, w)
			at := func(x uint64) uint64 { return l.weigh(prev, w-x) } // ⌊prev·x/W⌋, x in [1, W]
			if s > 0 {
				require.LessOrEqual(t, at(s), a)
			}
			if s+1 <= w {
				require.Greater(t, at(s+1), a)
			}
		}
	})
}

// TestReportOfAKilledKeyStillMappedIsFresh: between a sweep's kill of an
// idle key and its delete from the map, the map still gives the tombstoned
// cell; a report (Take of 0, or of more than the limit) reads it as the
// fresh key that will replace it, not as the tombstone's all-ones counts,
// which in a window of index 2^29 to 2^30 − 1 mod 2^30 (as the seconds of
// Unix time in 2023 are) read as counts past the limit.
func TestReportOfAKilledKeyStillMappedIsFresh(t *testing.T) {
	var now atomic.Int64
	now.Store(1_700_000_000 * int64(time.Second)) // window 1.7e9 ≥ 2^29 mod 2^30
	l, err := New(4, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, l.Take("k", 3).Allowed)
	now.Add(int64(2 * time.Second)) // two windows on: both counts weigh nothing
	c, held := l.cells.Peek("k")
	require.True(t, held)
	cur, _ := packed.Window(now.Load(), l.window)
	require.True(t, c.kill(cur), "a sweep's kill, its delete not yet landed")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 4}, l.Take("k", 0))
	assert.Equal(t, hotlimit.Decision{Limit: 4, Remaining: 4, RetryAfter: hotlimit.Never}, l.Take("k", 5))
	assert.Equal(t, 1, l.Len(), "a report deletes nothing")
}

// TestKillLosesToAnAdmission: a sweep's kill of an idle key and an
// admission on it race; the kill swaps the tombstone in only over the word
// it found idle, so when the admission's swap lands first the kill fails
// and the key keeps the admission: never both (see
// limitertest.KillOrWriteNotBoth).
func TestKillLosesToAnAdmission(t *testing.T) {
	const cur = 10
	idle := pack(cur-2, 0, 3) // counted two windows ago: idle in window cur
	rounds := limitertest.RaceRounds()
	c := newCell()
	limitertest.KillOrWriteNotBoth(t, rounds,
		func() { c.word.Store(idle) },
		func() bool { return c.word.CompareAndSwap(idle, pack(cur, 0, 1)) }, // admit in window cur
		func() bool { return c.kill(cur) })
}
