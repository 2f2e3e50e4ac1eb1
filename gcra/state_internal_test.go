package gcra

import (
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFreshIsTheZeroWord(t *testing.T) {
	assert.Equal(t, fresh, newCell().word.Load())
	assert.NotEqual(t, fresh, dead)
}

func TestKill(t *testing.T) {
	c := newCell()
	assert.True(t, c.kill(0), "a fresh cell is full at the epoch")
	assert.False(t, c.kill(5), "dead already")
	for i, tc := range []struct {
		tat, s uint64
		full   bool
	}{
		{4, 5, true},
		{5, 5, true}, // full at exactly its TAT
		{6, 5, false},
		{math.MaxInt64, math.MaxInt64 - 1, false},
	} {
		c := newCell()
		c.word.Store(tc.tat)
		assert.Equal(t, tc.full, c.kill(tc.s), "case %d", i)
		if tc.full {
			assert.Equal(t, dead, c.word.Load(), "case %d", i)
		} else {
			assert.Equal(t, tc.tat, c.word.Load(), "case %d", i)
		}
	}
}

func TestScaleFor(t *testing.T) {
	for i, tc := range []struct {
		limit, window, scale, tsc uint64
	}{
		{5, uint64(time.Second), 1, 200_000_000},
		{3, uint64(time.Second), 3, 1_000_000_000},
		{12, uint64(time.Second), 3, 250_000_000},
		{16, uint64(15*time.Millisecond + 1), 16, 15_000_001},  // odd window: scale 16
		{17, uint64(time.Second), MaxScale, 941_176_471},       // ⌈16e9/17⌉: rounded
		{1 << 20, uint64(time.Second), MaxScale, 15259},        // ⌈16e9/2^20⌉
		{1 << 20, uint64(time.Millisecond), MaxScale, 16},      // ⌈16e6/2^20⌉ = 15.26 → 16
		{1, uint64(24 * time.Hour), 1, uint64(24 * time.Hour)}, // the longest T
	} {
		scale, tsc := scaleFor(tc.limit, tc.window)
		assert.Equal(t, tc.scale, scale, "case %d", i)
		assert.Equal(t, tc.tsc, tsc, "case %d", i)
	}
}

// FuzzScaleFor checks scaleFor across New's ranges against math/big: T in
// units is window·scale/limit, exact when scale ≤ MaxScale allows it, else
// rounded up by less than one unit; never zero.
func FuzzScaleFor(f *testing.F) {
	f.Add(uint64(5), uint64(time.Second))
	f.Add(uint64(1048573), uint64(time.Millisecond))
	f.Add(uint64(1), uint64(24*time.Hour))
	f.Fuzz(func(t *testing.T, limit, window uint64) {
		limit = 1 + limit%MaxLimit
		window = uint64(MinWindow) + window%uint64(MaxWindow-MinWindow+1)
		scale, tsc := scaleFor(limit, window)
		require.GreaterOrEqual(t, scale, uint64(1))
		require.LessOrEqual(t, scale, uint64(MaxScale))
		require.Positive(t, tsc)
		exact := new(big.Rat).SetFrac(new(big.Int).SetUint64(window*scale), new(big.Int).SetUint64(limit))
		got := new(big.Rat).SetInt(new(big.Int).SetUint64(tsc))
		require.GreaterOrEqual(t, got.Cmp(exact), 0, "T is never shortened")
		if exact.IsInt() {
			require.Zero(t, got.Cmp(exact))
		} else {
			require.Equal(t, uint64(MaxScale), scale, "exact whenever the scale allows")
			require.Negative(t, new(big.Rat).Sub(got, big.NewRat(1, 1)).Cmp(exact), "rounded up by less than a unit")
		}
	})
}

// FuzzCeilDiv checks ceilDiv against math/big over all of uint64.
func FuzzCeilDiv(f *testing.F) {
	f.Add(uint64(0), uint64(1))
	f.Add(uint64(math.MaxUint64), uint64(3))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		if b == 0 {
			b = 1
		}
		q, r := new(big.Int).QuoRem(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b), new(big.Int))
		if r.Sign() > 0 {
			q.Add(q, big.NewInt(1))
		}
		require.Equal(t, q.Uint64(), ceilDiv(a, b), "⌈%d/%d⌉", a, b)
	})
}

// TestWaitSaturates: a wait past the limiter's horizon, or beyond int64
// nanoseconds with the lag, is Never.
func TestWaitSaturates(t *testing.T) {
	l, err := New(3, time.Second)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(1), l.wait(3, 0, 0))
	assert.Equal(t, time.Duration(2), l.wait(4, 0, 0), "⌈4/3⌉")
	assert.Equal(t, time.Duration(1+5), l.wait(3, 0, 5), "plus the lag")
	assert.Equal(t, time.Duration(math.MaxInt64), l.wait(l.maxTime*l.scale+1, 0, 0))
	assert.Equal(t, time.Duration(math.MaxInt64), l.wait(3, 0, math.MaxUint64))
	assert.LessOrEqual(t, l.maxTime*l.scale+l.span, uint64(math.MaxInt64), "no live word reaches 2^63")
}
