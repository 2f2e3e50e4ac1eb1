package packed_test

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/packed"
)

const (
	windowIndexMod  = uint64(1) << packed.WindowIndexBits // 2^42
	windowIndexMask = windowIndexMod - 1
	windowHalf      = windowIndexMod / 2 // 2^41: the unambiguous distance
	windowMinNs     = int64(time.Millisecond)
	windowMaxNs     = int64(366 * 24 * time.Hour)
)

// windowBigFloor returns ⌊a/b⌋ for b > 0, exactly.
func windowBigFloor(a, b *big.Int) *big.Int {
	q, _ := new(big.Int).DivMod(a, b, new(big.Int)) // Euclidean: floored when b > 0
	return q
}

// windowMod42 returns x mod 2^42 in [0, 2^42).
func windowMod42(x *big.Int) uint64 {
	return new(big.Int).Mod(x, new(big.Int).SetUint64(windowIndexMod)).Uint64()
}

func TestWindowLayout(t *testing.T) {
	assert.Equal(t, 64, packed.WindowCountBits+packed.WindowIndexBits)
	assert.EqualValues(t, 1<<22-2, packed.MaxWindowLimit)
	assert.GreaterOrEqual(t, packed.MaxWindowLimit, 1<<20)
	_, deadCount := packed.UnpackWindow(packed.WindowDead)
	assert.Greater(t, deadCount, uint64(packed.MaxWindowLimit), "the tombstone's count is no count")
	assert.Equal(t, uint64(0), packed.PackWindow(0, 0))
}

// FuzzWindowPack: Pack and Unpack are inverse bijections between words and
// (index mod 2^42, count < 2^22); no count a limiter writes (at most
// MaxWindowLimit) makes the tombstone; count+n within a limit never spills
// into the index.
func FuzzWindowPack(f *testing.F) {
	f.Add(uint64(0), uint64(0), uint64(0))
	f.Add(windowIndexMask, uint64(packed.MaxWindowLimit), uint64(1))
	f.Add(windowIndexMod, uint64(packed.MaxWindowLimit+1), uint64(0))
	f.Add(uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64))
	f.Add(uint64(12345), uint64(1<<20), uint64(1<<21))
	f.Fuzz(func(t *testing.T, index, count, w uint64) {
		gi, gc := packed.UnpackWindow(packed.PackWindow(index, count))
		if gi != index&windowIndexMask || gc != count&(1<<packed.WindowCountBits-1) {
			t.Fatalf("Unpack(Pack(%d, %d)) = %d, %d", index, count, gi, gc)
		}
		if i, c := packed.UnpackWindow(w); packed.PackWindow(i, c) != w || i > windowIndexMask {
			t.Fatalf("Pack(Unpack(%#x)) = %#x", w, packed.PackWindow(i, c))
		}
		// A limiter's write: count+n ≤ limit ≤ MaxWindowLimit.
		limit := 1 + count%packed.MaxWindowLimit
		n := 1 + w%limit
		c := index % (limit - n + 1)
		word := packed.PackWindow(index, c+n)
		if word == packed.WindowDead {
			t.Fatalf("Pack(%d, %d) is the tombstone", index, c+n)
		}
		if gi, gc := packed.UnpackWindow(word); gi != index&windowIndexMask || gc != c+n {
			t.Fatalf("count %d+%d spilled: got %d, %d", c, n, gi, gc)
		}
	})
}

// FuzzWindowIndex checks WindowIndex against math/big floored division for
// every int64 clock and every positive window.
func FuzzWindowIndex(f *testing.F) {
	for _, now := range []int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, -999999, 10900000000} {
		for _, w := range []int64{1, windowMinNs, int64(time.Second), windowMaxNs, math.MaxInt64} {
			f.Add(now, w)
		}
	}
	f.Fuzz(func(t *testing.T, now, window int64) {
		if window <= 0 {
			if window == math.MinInt64 {
				return
			}
			window = -window
			if window == 0 {
				window = 1
			}
		}
		got := packed.WindowIndex(now, window)
		want := windowBigFloor(big.NewInt(now), big.NewInt(window))
		if !want.IsInt64() || got != want.Int64() {
			t.Fatalf("WindowIndex(%d, %d) = %d, want %v", now, window, got, want)
		}
		// got·window ≤ now < (got+1)·window, exactly.
		lo := new(big.Int).Mul(big.NewInt(got), big.NewInt(window))
		hi := new(big.Int).Add(lo, big.NewInt(window))
		if n := big.NewInt(now); lo.Cmp(n) > 0 || hi.Cmp(n) <= 0 {
			t.Fatalf("WindowIndex(%d, %d) = %d: %v..%v misses now", now, window, got, lo, hi)
		}
	})
}

// FuzzWindowAdvance checks Advance against a math/big model of its contract:
// with d = (now − index) mod 2^42, d = 0 is the same window, 0 < d < 2^41 a
// later one (count restarts at zero), d ≥ 2^41 an earlier one (the stored
// window and count are kept, now is 2^42 − d windows behind).
// TestWindowAtTheEnds checks Window against math/big floored division, at
// the ends of int64 time and around zero, for windows from a millisecond to
// 366 days.
func TestWindowAtTheEnds(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, w := range []int64{windowMinNs, windowMinNs + 1, 1 << 20, 7 * int64(time.Millisecond), int64(time.Second), 1 << 54, windowMaxNs} {
		times := []int64{math.MinInt64, math.MinInt64 + 1, -w - 1, -w, -w + 1, -1, 0, 1, w - 1, w, w + 1,
			math.MaxInt64 - w, math.MaxInt64 - 1, math.MaxInt64}
		for range 100 {
			t := int64(rng.Uint64())
			times = append(times, t, t-t%w, t-t%w-1)
		}
		for _, now := range times {
			q, m := new(big.Int).DivMod(big.NewInt(now), big.NewInt(w), new(big.Int)) // Euclidean: floored for w > 0
			cur, rem := packed.Window(now, uint64(w))
			assert.Equal(t, q.Int64(), int64(cur), "window %d now %d", w, now)
			assert.Equal(t, m.Uint64(), rem, "window %d now %d", w, now)
		}
	}
}

func FuzzWindowAdvance(f *testing.F) {
	for _, c := range [][2]uint64{
		{0, 0}, {0, 1}, {1, 0}, {0, windowHalf - 1}, {0, windowHalf}, {0, windowHalf + 1},
		{windowIndexMask, 0}, {0, windowIndexMask}, {5, 4}, {windowIndexMask, windowHalf - 2},
	} {
		f.Add(c[0], uint64(3), c[1])
	}
	f.Fuzz(func(t *testing.T, index, count, now uint64) {
		index &= windowIndexMask
		now &= windowIndexMask
		count %= packed.MaxWindowLimit + 1
		d := windowMod42(new(big.Int).Sub(new(big.Int).SetUint64(now), new(big.Int).SetUint64(index)))
		wi, wc, wb := index, count, uint64(0)
		switch {
		case d == 0:
		case d < windowHalf:
			wi, wc = now, 0
		default:
			wb = windowIndexMod - d
		}
		gi, gc, gb := packed.Advance(index, count, now)
		if gi != wi || gc != wc || gb != wb {
			t.Fatalf("Advance(%d, %d, %d) = %d, %d, %d; want %d, %d, %d", index, count, now, gi, gc, gb, wi, wc, wb)
		}
		if gb > windowHalf || (now+gb)&windowIndexMask != gi {
			t.Fatalf("Advance(%d, %d, %d): behind %d does not lead from now to %d", index, count, now, gb, gi)
		}
	})
}

// FuzzWindowClock runs the word the way a limiter does, on real clock
// readings: a word written at t0 and read at t1 (windows in the documented
// range [1ms, 366 days]). Whenever the two windows are less than 2^41 apart,
// Advance tells exactly which came first and by how many windows, and when
// t1's is the earlier, CountedAt names the start of t0's.
func FuzzWindowClock(f *testing.F) {
	f.Add(int64(10900*time.Millisecond), int64(11050*time.Millisecond), windowMinNs*1000)
	f.Add(int64(-1), int64(0), windowMinNs)
	f.Add(int64(0), int64(-1), windowMinNs)
	f.Add(int64(math.MinInt64), int64(math.MaxInt64), windowMinNs)
	f.Add(int64(math.MaxInt64), int64(math.MinInt64), windowMaxNs)
	// Back into the first window, from the second and from near the other
	// end (the window is windowMinNs + the third argument mod the span).
	f.Add(int64(math.MinInt64+windowMinNs), int64(math.MinInt64), int64(0))
	f.Add(int64(math.MaxInt64-2*windowMaxNs), int64(math.MinInt64), windowMaxNs-windowMinNs)
	f.Add(int64(math.MaxInt64-2*int64(time.Hour)), int64(math.MinInt64), int64(time.Hour)-windowMinNs)
	f.Add(int64(-5), int64(1<<62), windowMinNs+7)
	// Forward between two windows before the origin, whose indexes as
	// uint64 lie above 2^42: the new window is still the index mod 2^42.
	f.Add(int64(-1500*time.Microsecond), int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, t0, t1, window int64) {
		span := uint64(windowMaxNs - windowMinNs + 1)
		window = windowMinNs + int64(uint64(window)%span)
		i0 := windowBigFloor(big.NewInt(t0), big.NewInt(window))
		i1 := windowBigFloor(big.NewInt(t1), big.NewInt(window))
		if packed.WindowIndex(t0, window) != i0.Int64() {
			t.Fatalf("WindowIndex(%d, %d)", t0, window)
		}
		dist := new(big.Int).Sub(i1, i0) // windows from the write to the read
		if new(big.Int).Abs(dist).Cmp(new(big.Int).SetUint64(windowHalf)) >= 0 {
			return // outside the unambiguous range; FuzzWindowAdvance covers the wrap
		}
		stored := uint64(packed.WindowIndex(t0, window))
		w := packed.PackWindow(stored, 7)
		index, count := packed.UnpackWindow(w)
		gi, gc, gb := packed.Advance(index, count, uint64(packed.WindowIndex(t1, window)))
		switch dist.Sign() {
		case 0:
			if gi != index || gc != 7 || gb != 0 {
				t.Fatalf("same window %v: got %d, %d, %d", i0, gi, gc, gb)
			}
		case 1:
			if gi != windowMod42(i1) || gc != 0 || gb != 0 {
				t.Fatalf("later window %v after %v: got %d, %d, %d", i1, i0, gi, gc, gb)
			}
		default:
			if gi != index || gc != 7 || gb != new(big.Int).Neg(dist).Uint64() {
				t.Fatalf("earlier window %v before %v: got %d, %d, %d", i1, i0, gi, gc, gb)
			}
			// Requests decided at t1 count at the start of t0's window, a
			// time after t1: an int64.
			rem := uint64(t1) - uint64(packed.WindowIndex(t1, window))*uint64(window)
			want := new(big.Int).Mul(i0, big.NewInt(window)).Int64()
			if got := packed.CountedAt(t1, rem, gb, uint64(window)); got != want {
				t.Fatalf("CountedAt(%d, %d, %d, %d) = %d, want %d, the start of %d's window", t1, rem, gb, window, got, want, t0)
			}
		}
	})
}

// windowCountedAt is CountedAt's contract in math/big: now when behind is 0,
// else the start of the window behind windows after now's, ⌊now/window⌋·window
// + behind·window, or math.MaxInt64 when that start lies past it.
func windowCountedAt(now int64, behind, window uint64) int64 {
	if behind == 0 {
		return now
	}
	w := new(big.Int).SetUint64(window)
	start := windowBigFloor(big.NewInt(now), w)
	start.Add(start, new(big.Int).SetUint64(behind)).Mul(start, w)
	if !start.IsInt64() {
		return math.MaxInt64
	}
	return start.Int64()
}

// TestCountedAtTheEdges checks CountedAt against its contract at both ends
// of int64: from the first window of the clock's range, which starts before
// math.MinInt64 (now − rem wraps there), into or past the last window, on
// windows whose boundaries fall on math.MaxInt64 (7 divides it) and on 2^63
// (2^30), and from one end to a window near the other, more than
// math.MaxInt64 after now.
func TestCountedAtTheEdges(t *testing.T) {
	ms := uint64(windowMinNs)
	cases := []struct {
		now            int64
		behind, window uint64
	}{
		{math.MinInt64, 0, ms},
		{math.MinInt64, 1, ms}, // the first window's successor: -9223372036854000000
		{math.MinInt64, 2, ms},
		{math.MinInt64 + 1, 1, uint64(windowMaxNs)},
		{math.MinInt64, 1, 7},
		{math.MinInt64, 1, 1 << 30},
		{-5, 1, ms},
		{0, 1 << 41, ms},
		{math.MaxInt64 - int64(ms), 1, ms},
		{math.MaxInt64, 1, ms}, // past the last window: saturated
		{math.MaxInt64 - 1, 1, 7},
		{math.MaxInt64 - 7, 1, 7},
		{math.MaxInt64 - 1<<30, 1, 1 << 30},
		{math.MaxInt64 - 1<<30 + 1, 1, 1 << 30}, // 2^63: saturated
		{0, 1 << 42, uint64(windowMaxNs)},       // past 2^64: saturated
		// From the first window to one near the other end: the start lies
		// more than math.MaxInt64 after now, below it or past it.
		{math.MinInt64, 583, uint64(windowMaxNs)},
		{math.MinInt64, 584, uint64(windowMaxNs)},
		{math.MinInt64, 1<<33 - 1, 1 << 30},
		{math.MinInt64, 1 << 33, 1 << 30},
		{math.MinInt64 + 1, 2635249153387078801, 7},
		{math.MinInt64 + 1, 2635249153387078802, 7},
	}
	for _, c := range cases {
		rem := uint64(c.now) - uint64(packed.WindowIndex(c.now, int64(c.window)))*c.window
		assert.Equal(t, windowCountedAt(c.now, c.behind, c.window), packed.CountedAt(c.now, rem, c.behind, c.window),
			"CountedAt(%d, %d, %d, %d)", c.now, rem, c.behind, c.window)
	}
	assert.Equal(t, int64(-9223372036854000000), packed.CountedAt(math.MinInt64, 224192, 1, ms))
}
