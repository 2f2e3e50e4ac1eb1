package gcra

import (
	"math"
	"math/big"
	"math/bits"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
)

func TestFreshIsTheZeroWord(t *testing.T) {
	assert.Equal(t, fresh, newCell().word.Load())
	assert.NotEqual(t, fresh, dead)
}

func TestKill(t *testing.T) {
	c := newCell()
	assert.True(t, c.kill(0), "a fresh cell is full at the epoch")
	assert.True(t, c.kill(5), "dead already: reported dead, for the sweeper to delete")
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

func TestTickFor(t *testing.T) {
	for i, tc := range []struct {
		limit, window, burst, num, den, tsc uint64
	}{
		{5, uint64(time.Second), 5, 1, 1, 200_000_000},
		{3, uint64(time.Second), 3, 3, 1, 1_000_000_000},
		{12, uint64(time.Second), 2, 3, 1, 250_000_000},
		{16, uint64(15*time.Millisecond + 1), 1, 16, 1, 15_000_001},  // odd window: scale 16, exact
		{1, uint64(24 * time.Hour), 1, 1, 1, uint64(24 * time.Hour)}, // the longest T
		// Fine ticks: T = 2^F ticks, num/den = limit·2^F/window reduced.
		{1 << 20, uint64(time.Millisecond), 1 << 20, 1 << 18, 15625, 1 << 4}, // 2^24/10^6
		{17, uint64(time.Second), 17, 17 << 21, 1953125, 1 << 30},            // F = 30: 2^58 ns of time
	} {
		num, den, tsc := tickFor(tc.limit, tc.window, tc.burst)
		assert.Equal(t, [3]uint64{tc.num, tc.den, tc.tsc}, [3]uint64{num, den, tsc}, "case %d", i)
	}
}

// TestTimeKeptByTicks pins the spans the package documentation gives for the
// limiter's time, at their least, a burst refilled in MaxBurstSpan: over
// MinTime with fine ticks, 17 years with exact ones (2^63 ticks of 1/16 ns,
// less the burst's span), 291 with D = 1 (2^63 ns less 366 days); and the F
// it names for three fine rates.
func TestTimeKeptByTicks(t *testing.T) {
	const year = 365.25 * 24 * float64(time.Hour)
	for i, tc := range []struct {
		limit, burst int
		window       time.Duration
		fracBits     int // F for fine ticks, -1 for exact ones
		years        float64
	}{
		{17, 17, time.Second, 30, 16.0},
		{1 << 20, 1 << 20, time.Second, 14, 17.0},
		{1 << 20, 1 << 20, time.Millisecond, 4, 17.4},
		{1<<20 - 1, 1 << 20, MaxWindow, 31, 11.2}, // fine ticks: over MinTime
		{16, 5856, MaxWindow - 1, -1, 17.3},       // D = 16, a burst span of 366 days
		{3, 3, time.Second, -1, 97.4},             // D = 3
		{1, 366, MaxWindow, -1, 291.2},            // D = 1, a burst span of 366 days
		{1, 1, time.Second, -1, 292.2},
	} {
		l, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst), hotlimit.WithClock(func() int64 { return 0 }))
		require.NoError(t, err, "case %d", i)
		if tc.fracBits < 0 {
			assert.Equal(t, uint64(1), l.den, "case %d: exact ticks", i)
		} else {
			assert.Equal(t, uint64(1)<<tc.fracBits, l.tsc, "case %d: T = 2^F ticks", i)
		}
		assert.GreaterOrEqual(t, l.maxTime, uint64(MinTime), "case %d", i)
		assert.InDelta(t, tc.years, float64(l.maxTime)/year, 0.1, "case %d", i)
	}
}

// FuzzTickFor checks tickFor across New's ranges against math/big: T in ticks
// is exactly window/limit ns at num/den ticks per ns; exact ticks (den = 1)
// whenever Limit/gcd(Window, Limit) ≤ MaxScale, fine ones (T = 2^F ticks,
// F ≥ 4) otherwise, with F the largest that keeps the limiter's time at
// least MinTime; maxTimeFor is ⌊(2^63 − 1 − span)·den/num⌋ saturated at
// 2^63 − 1; and the limiter keeps time for at least MinTime with no live
// word reaching 2^63.
func FuzzTickFor(f *testing.F) {
	f.Add(uint64(5), uint64(time.Second), uint64(5))
	f.Add(uint64(1048573), uint64(time.Millisecond), uint64(1))
	f.Add(uint64(1<<20), uint64(time.Millisecond), uint64(1<<20))
	f.Add(uint64(1), uint64(24*time.Hour), uint64(1))
	// The seeds below are given as the fuzz function maps them back: limit − 1,
	// window − MinWindow, burst − 1.
	// Limit 1033357 per 135444169209 ns, burst 8199: F = 22 keeps exactly
	// MinTime, ⌊(2^63 − 1 − 8199·2^22)·window/(limit·2^22)⌋ = 2^58.
	f.Add(uint64(1033357-1), uint64(135444169209-MinWindow), uint64(8199-1))
	// Limit 1033357 per 1058157569 ns, burst 1048575: F = 15 would keep
	// MinTime for a span of one tick, not of 1048575·2^15 ticks: F = 14.
	f.Add(uint64(1033357-1), uint64(1058157569-MinWindow), uint64(1048575-1))
	// Limit 17 per 146028888133 ns, burst 1: at F = 32 the high word of
	// (2^63 − 1 − 2^32)·den is num itself, so the quotient is 2^64,
	// saturated, not a division that overflows.
	f.Add(uint64(17-1), uint64(146028888133-MinWindow), uint64(0)) // burst 1
	// Limit 17 per 100 s, burst 1: at F = 32 the quotient lies between 2^63
	// and 2^64, saturated at 2^63 − 1.
	f.Add(uint64(17-1), uint64(100*time.Second-MinWindow), uint64(0)) // burst 1
	f.Fuzz(func(t *testing.T, limit, window, burst uint64) {
		limit = 1 + limit%MaxLimit
		window = uint64(MinWindow) + window%uint64(MaxWindow-MinWindow+1)
		burst = 1 + burst%MaxBurst
		if burst > bounds.MaxBurstFor(limit, window) {
			t.Skip("refill longer than MaxBurstSpan: New rejects it")
		}
		num, den, tsc := tickFor(limit, window, burst)
		require.Positive(t, num)
		require.Positive(t, den)
		require.Positive(t, tsc)
		// T·den/num == window/limit: T ticks are exactly one emission interval.
		lhs := new(big.Int).Mul(new(big.Int).SetUint64(tsc), new(big.Int).SetUint64(den))
		lhs.Mul(lhs, new(big.Int).SetUint64(limit))
		rhs := new(big.Int).Mul(new(big.Int).SetUint64(window), new(big.Int).SetUint64(num))
		require.Zero(t, lhs.Cmp(rhs), "T ticks = window/limit ns")
		if limit/gcd(window, limit) <= MaxScale {
			require.Equal(t, uint64(1), den, "exact whenever the scale allows")
		} else {
			require.Equal(t, 1, bits.OnesCount64(tsc), "fine ticks: T = 2^F")
			require.GreaterOrEqual(t, tsc, uint64(16), "F ≥ 4")
		}
		span := burst * tsc
		maxTime := maxTimeFor(num, den, span)
		require.Equal(t, bigMaxTime(num, den, span), maxTime, "maxTimeFor")
		require.GreaterOrEqual(t, maxTime, uint64(MinTime))
		if den != 1 && tsc < 1<<MaxFracBits {
			// F + 1 would keep less than MinTime: F is the largest.
			f1 := uint(bits.TrailingZeros64(tsc)) + 1
			g := gcd(limit<<f1, window)
			require.Less(t, bigMaxTime(limit<<f1/g, window/g, burst<<f1), uint64(MinTime), "F is the largest")
		}
		s := new(big.Int).Mul(new(big.Int).SetUint64(maxTime), new(big.Int).SetUint64(num))
		s.Quo(s, new(big.Int).SetUint64(den))
		s.Add(s, new(big.Int).SetUint64(span))
		require.LessOrEqual(t, s.Cmp(big.NewInt(math.MaxInt64)), 0, "s(maxTime) + span < 2^63")
	})
}

// bigMaxTime is maxTimeFor in math/big: ⌊(2^63 − 1 − span)·den/num⌋,
// at most 2^63 − 1.
func bigMaxTime(num, den, span uint64) uint64 {
	q := new(big.Int).SetUint64(math.MaxInt64 - span)
	q.Mul(q, new(big.Int).SetUint64(den))
	q.Quo(q, new(big.Int).SetUint64(num))
	if q.Cmp(big.NewInt(math.MaxInt64)) > 0 {
		return math.MaxInt64
	}
	return q.Uint64()
}

// FuzzTicks checks the limiter's clock against math/big: ⌊ns·num/den⌋ for
// every ns up to maxTime, and wait's ⌈x·den/num⌉ is the first nanosecond
// whose ticks reach x.
func FuzzTicks(f *testing.F) {
	f.Add(uint64(1<<20), uint64(time.Millisecond), uint64(12345678901))
	f.Add(uint64(17), uint64(time.Second), uint64(math.MaxUint64))
	f.Add(uint64(3), uint64(time.Second), uint64(7))
	f.Fuzz(func(t *testing.T, limit, window, ns uint64) {
		limit = 1 + limit%MaxLimit
		window = uint64(MinWindow) + window%uint64(MaxWindow-MinWindow+1)
		l, err := New(int(limit), time.Duration(window), hotlimit.WithClock(func() int64 { return 0 }))
		require.NoError(t, err)
		ns %= l.maxTime + 1
		want := new(big.Int).Mul(new(big.Int).SetUint64(ns), new(big.Int).SetUint64(l.num))
		want.Quo(want, new(big.Int).SetUint64(l.den))
		s := l.ticks(ns)
		require.Equal(t, want.Uint64(), s, "ticks(%d)", ns)
		if d := l.wait(s+1, ns, 0); d != hotlimit.Never {
			require.Positive(t, d)
			require.Greater(t, l.ticks(ns+uint64(d)), s, "wait reaches s+1")
			require.Equal(t, s, l.ticks(ns+uint64(d)-1), "and not a nanosecond earlier")
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
	assert.Equal(t, time.Duration(math.MaxInt64), l.wait(l.ticks(l.maxTime)+1, 0, 0))
	assert.Equal(t, time.Duration(math.MaxInt64), l.wait(3, 0, math.MaxUint64))
	assert.LessOrEqual(t, l.ticks(l.maxTime)+l.span, uint64(math.MaxInt64), "no live word reaches 2^63")
	// Fine ticks: x·den/num past 2^64 is Never, not a wrapped product.
	l, err = New(17, 24*time.Hour, hotlimit.WithClock(func() int64 { return 0 }))
	require.NoError(t, err)
	assert.Equal(t, hotlimit.Never, l.wait(math.MaxInt64, 0, 0))
}

// TestReportOfAKilledKeyStillMappedIsFresh: between a sweep's kill of a full
// key and its delete from the map, the map still gives the tombstoned cell;
// a report (Take of 0, or of more than the burst) reads it as the fresh key
// that will replace it: the burst left and no reset, not a drained one
// reset at Never.
func TestReportOfAKilledKeyStillMappedIsFresh(t *testing.T) {
	var now atomic.Int64
	l, err := New(4, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, l.Take("k", 3).Allowed)
	now.Store(int64(time.Second)) // full: the TAT, 750 ms, is behind now
	c, held := l.cells.Peek("k")
	require.True(t, held)
	s, _, _ := l.now()
	require.True(t, c.kill(s), "a sweep's kill, its delete not yet landed")
	assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: 4, Remaining: 4}, l.Take("k", 0))
	assert.Equal(t, hotlimit.Decision{Limit: 4, Remaining: 4, RetryAfter: hotlimit.Never}, l.Take("k", 5))
	assert.Equal(t, 1, l.Len(), "a report deletes nothing")
}

// TestKillLosesToAnAdmission: a sweep's kill of a full key and an admission
// on it race; the kill swaps the tombstone in only over the word it found
// full, so when the admission's swap lands first the kill fails and the key
// keeps the admission: never both (see limitertest.KillOrWriteNotBoth).
func TestKillLosesToAnAdmission(t *testing.T) {
	const tat, s, tsc = 100, 200, 50 // full at s
	rounds := limitertest.RaceRounds()
	c := newCell()
	limitertest.KillOrWriteNotBoth(t, rounds,
		func() { c.word.Store(tat) },
		func() bool { return c.word.CompareAndSwap(tat, s+tsc) }, // admit at s
		func() bool { return c.kill(s) })
}
