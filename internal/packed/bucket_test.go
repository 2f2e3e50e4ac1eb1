package packed_test

import (
	"math"
	"math/big"
	"math/bits"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// bucketLayout builds a layout from fuzz inputs, inside NewBucket's contract:
// fracBits ≤ MaxFracBits, limit, burst ≥ 1 with limit·2^fracBits < 2^62 and
// burst·2^fracBits < 2^62, window ≥ 1. Every third input is brought inside
// the ranges the tokenbucket limiter uses (limit, burst ≤ 2^20, window in
// [1ms, 24h]), where most layouts live. The burst is drawn from the limit's
// bits (so the fuzz signatures and corpus stay as they were): half of the
// layouts have burst = limit, the others a burst above or below it.
func bucketLayout(limit, window uint64, fracBits uint8) packed.Bucket {
	f := uint(fracBits) % (packed.MaxFracBits + 1)
	mix := bits.RotateLeft64(limit*0x9E3779B97F4A7C15, 29)
	bound := uint64(1)<<(62-f) - 1
	if window%3 == 0 {
		bound = 1 << 20
		window = uint64(time.Millisecond) + window%uint64(24*time.Hour)
	} else {
		window = 1 + window%(1<<62)
	}
	limit = 1 + limit%bound
	burst := limit
	if (window/3)%2 == 1 {
		burst = 1 + mix%bound
	}
	return packed.NewBucket(limit, burst, window, f)
}

// bigU returns u(t) = ⌊t·PerWindow/Window⌋ exactly, and the remainder.
func bigU(b packed.Bucket, t uint64) (*big.Int, uint64) {
	return bigUx(b, new(big.Int).SetUint64(t))
}

func bigUx(b packed.Bucket, t *big.Int) (*big.Int, uint64) {
	x := new(big.Int).Mul(t, new(big.Int).SetUint64(b.PerWindow))
	q, r := new(big.Int).QuoRem(x, new(big.Int).SetUint64(b.Window), new(big.Int))
	return q, r.Uint64()
}

func lowBits(x *big.Int, n uint) uint64 {
	m := new(big.Int).Lsh(big.NewInt(1), n)
	return new(big.Int).Mod(x, m).Uint64()
}

func bucketSeeds(f *testing.F, extra ...uint64) {
	for _, c := range []struct {
		limit, window uint64
		fracBits      uint8
	}{
		{5, uint64(time.Second), 18},
		{1 << 20, uint64(time.Millisecond), 0},
		{1, uint64(24 * time.Hour), 28},
		{3, uint64(7 * time.Millisecond), 15},
		{1 << 16, uint64(time.Millisecond), 0},
		{1<<20 - 1, uint64(24 * time.Hour), 32},
		{1, 1, 32},
		{math.MaxUint64, math.MaxUint64, math.MaxUint8},
		{5, uint64(time.Second) + 3, 18}, // a burst other than the limit
		{1, uint64(24*time.Hour) + 3, 28},
	} {
		args := []any{c.limit, c.window, c.fracBits}
		for _, e := range extra {
			args = append(args, e)
		}
		f.Add(args...)
	}
}

func TestBucketKnownLayouts(t *testing.T) {
	b := packed.NewBucket(5, 5, uint64(time.Second), 18)
	assert.EqualValues(t, 5<<18, b.Cap)
	assert.EqualValues(t, 43, b.TickBits)
	assert.EqualValues(t, uint64(200*time.Millisecond)<<24, b.Range(), "2^42 units of 1s/(5·2^18): 2^24 token times")
	u, rem := b.Units(uint64(400 * time.Millisecond))
	assert.EqualValues(t, 2<<18, u, "400 ms at 5/s: exactly 2 tokens")
	assert.Zero(t, rem)
	tokens, last := b.Refill(b.Cap, 12345, 7) // a full word's timestamp is ignored
	assert.Equal(t, b.Cap, tokens)
	assert.EqualValues(t, 7, last)
	dead, _ := b.Unpack(packed.BucketDead)
	assert.Greater(t, dead, b.Cap)

	// A burst of 7 at 5 per second: the capacity is 7 tokens, the refill
	// still 5 per second (so 400 ms is still exactly 2 tokens).
	b = packed.NewBucket(5, 7, uint64(time.Second), 18)
	assert.EqualValues(t, 7<<18, b.Cap)
	assert.EqualValues(t, 5<<18, b.PerWindow)
	assert.EqualValues(t, 43, b.TickBits, "7<<18 + 1 needs 21 bits, as 5<<18 + 1 does")
	u, _ = b.Units(uint64(400 * time.Millisecond))
	assert.EqualValues(t, 2<<18, u)
	assert.EqualValues(t, 1400*time.Millisecond, b.Wait(b.Cap, 0), "empty to full: 7 tokens at 5 per second")
	tokens, _ = b.Refill(0, 0, b.Cap+5)
	assert.Equal(t, b.Cap, tokens, "refills stop at the capacity")
}

// TestBucketRangeSaturates: Range is 2^(T−1) units of time, saturated at
// 2^63−1 ns, also where 2^(T−1)·Window reaches PerWindow·2^64 (the 128/64
// division would not fit) and where the quotient fits 64 bits but not 63. A
// burst and limit of 1 with no fraction: Cap = 1, the token field 2 bits,
// T = 62, so Range = 2^61·Window ns.
func TestBucketRangeSaturates(t *testing.T) {
	for _, c := range []struct {
		window, want uint64
	}{
		{3, 3 << 61},       // below 2^63: exact
		{4, math.MaxInt64}, // 2^63: saturated
		{7, math.MaxInt64}, // 7·2^61, still below 2^64
		{8, math.MaxInt64}, // 2^64 = PerWindow·2^64: the division cannot run
		{1 << 40, math.MaxInt64},
	} {
		b := packed.NewBucket(1, 1, c.window, 0)
		assert.EqualValues(t, 62, b.TickBits)
		assert.Equal(t, c.want, b.Range(), "window %d ns", c.window)
	}
}

// TestBucketTombstoneAboveAllOnesCapacity: a capacity whose bits are all
// ones (3 tokens, no fraction) gets a token field one bit wider, so that the
// tombstone's all-ones field is still no token count and no live word, full
// at any timestamp, is the tombstone.
func TestBucketTombstoneAboveAllOnesCapacity(t *testing.T) {
	for _, burst := range []uint64{1, 3, 7, 1<<20 - 1} {
		b := packed.NewBucket(burst, burst, uint64(time.Second), 0)
		assert.Equal(t, burst, b.Cap)
		dead, _ := b.Unpack(packed.BucketDead)
		assert.Greater(t, dead, b.Cap, "burst %d", burst)
		assert.NotEqual(t, packed.BucketDead, b.Pack(b.Cap, math.MaxUint64), "burst %d", burst)
	}
}

// TestBucketRefillClockBack: a now at or beyond half the timestamp range
// before last (2^(T−1) units or more forward, modulo 2^T) is a clock that
// stepped back: nothing is refilled and last is kept, so that the refill
// later still counts from last. One unit short of half is elapsed time.
func TestBucketRefillClockBack(t *testing.T) {
	b := packed.NewBucket(5, 5, uint64(time.Second), 18) // T = 43
	half := uint64(1) << 42
	mask := uint64(1)<<43 - 1
	tokens := uint64(1) << 18 // one token
	for _, last := range []uint64{0, 1000, mask} {
		for _, now := range []uint64{last - 1, last - 5<<18, last + half, last + half + 1, last - half} {
			gt, gl := b.Refill(tokens, last, now)
			assert.Equal(t, tokens, gt, "last %d, now %d: nothing refilled", last, now)
			assert.Equal(t, last, gl, "last %d, now %d: last kept", last, now)
		}
		gt, gl := b.Refill(tokens, last, last+half-1)
		assert.Equal(t, b.Cap, gt, "last %d: half the range less a unit is elapsed", last)
		assert.Equal(t, (last+half-1)&mask, gl)
		gt, gl = b.Refill(tokens, last, last+7)
		assert.Equal(t, tokens+7, gt)
		assert.Equal(t, (last+7)&mask, gl)
	}
}

// TestBucketRefillStopsAtCap: a partly full word refills up to Cap and no
// further, whatever the elapsed units beyond what it lacks.
func TestBucketRefillStopsAtCap(t *testing.T) {
	b := packed.NewBucket(5, 5, uint64(time.Second), 18)
	for _, tokens := range []uint64{1, 1 << 18, b.Cap - 1} {
		lacks := b.Cap - tokens
		for _, elapsed := range []uint64{lacks, lacks + 1, lacks + tokens, b.Cap, b.Cap + tokens - 1} {
			gt, gl := b.Refill(tokens, 0, elapsed)
			assert.Equal(t, b.Cap, gt, "tokens %d, elapsed %d", tokens, elapsed)
			assert.Equal(t, elapsed, gl)
		}
		gt, _ := b.Refill(tokens, 0, lacks-1)
		assert.Equal(t, b.Cap-1, gt, "tokens %d: one unit short of full", tokens)
	}
}

// FuzzBucketLayout: the two fields fill the word exactly, hold Cap and leave
// the all-ones token field above it, and Range is 2^(T−1) units of time, to
// the nanosecond (big.Int).
func FuzzBucketLayout(f *testing.F) {
	bucketSeeds(f)
	f.Fuzz(func(t *testing.T, limit, window uint64, fracBits uint8) {
		b := bucketLayout(limit, window, fracBits)
		tokenBits := 64 - b.TickBits
		// T = 1 (limit·2^F = 2^62 − 1) is inside the contract, and useless:
		// its Range is one unit.
		if b.TickBits < 1 || b.Cap>>b.FracBits == 0 || b.PerWindow>>b.FracBits == 0 ||
			b.Cap&(1<<b.FracBits-1) != 0 || b.PerWindow&(1<<b.FracBits-1) != 0 {
			t.Fatalf("layout %+v", b)
		}
		if b.Cap+1 > 1<<tokenBits-1 {
			t.Fatalf("layout %+v: token field %d bits cannot hold Cap and the tombstone", b, tokenBits)
		}
		if tokens, _ := b.Unpack(packed.BucketDead); tokens <= b.Cap {
			t.Fatalf("layout %+v: the tombstone's token field %d is a token count", b, tokens)
		}
		want := new(big.Int).Lsh(big.NewInt(1), b.TickBits-1)
		want.Mul(want, new(big.Int).SetUint64(b.Window))
		want.Quo(want, new(big.Int).SetUint64(b.PerWindow))
		if want.Cmp(big.NewInt(math.MaxInt64)) > 0 {
			want.SetInt64(math.MaxInt64)
		}
		if got := b.Range(); got != want.Uint64() {
			t.Fatalf("layout %+v: Range %d, want %s", b, got, want)
		}
	})
}

// FuzzBucketPack: Pack and Unpack are inverse bijections between words and
// (tokens < 2^(64−T), last mod 2^T); no live word (tokens ≤ Cap) is the
// tombstone.
func FuzzBucketPack(f *testing.F) {
	bucketSeeds(f, 0, 0)
	f.Add(uint64(5), uint64(time.Second), uint8(18), uint64(math.MaxUint64), uint64(math.MaxUint64))
	f.Fuzz(func(t *testing.T, limit, window uint64, fracBits uint8, tokens, last uint64) {
		b := bucketLayout(limit, window, fracBits)
		tokens %= b.Cap + 1
		w := b.Pack(tokens, last)
		if w == packed.BucketDead {
			t.Fatalf("Pack(%d, %d) is the tombstone", tokens, last)
		}
		gt, gl := b.Unpack(w)
		if gt != tokens || gl != last&(1<<b.TickBits-1) {
			t.Fatalf("Unpack(Pack(%d, %d)) = %d, %d", tokens, last, gt, gl)
		}
		if tt, tl := b.Unpack(last); b.Pack(tt, tl) != last {
			t.Fatalf("Pack(Unpack(%#x)) = %#x", last, b.Pack(tt, tl))
		}
	})
}

// FuzzBucketUnits checks Units against big.Int: u(t) mod 2^64 and the
// remainder, for every t.
func FuzzBucketUnits(f *testing.F) {
	bucketSeeds(f, 0)
	bucketSeeds(f, math.MaxUint64)
	bucketSeeds(f, 1<<62)
	f.Fuzz(func(t *testing.T, limit, window uint64, fracBits uint8, at uint64) {
		b := bucketLayout(limit, window, fracBits)
		u, rem := b.Units(at)
		wu, wrem := bigU(b, at)
		if u != lowBits(wu, 64) || rem != wrem {
			t.Fatalf("layout %+v: Units(%d) = %d, %d; want %s mod 2^64, %d", b, at, u, rem, wu, wrem)
		}
	})
}

// FuzzBucketRefill checks Refill against big.Int for a word last refilled at
// a and read at c, within Range of each other (the wrap guard's promise),
// and that refills telescope: split at any b between a and c, two refills
// add what one does.
func FuzzBucketRefill(f *testing.F) {
	bucketSeeds(f, 0, 0, 0, 0)
	bucketSeeds(f, 1<<40, math.MaxUint64, 1<<61, 1<<30)
	f.Fuzz(func(t *testing.T, limit, window uint64, fracBits uint8, tokens, a, dist, split uint64) {
		b := bucketLayout(limit, window, fracBits)
		tokens %= b.Cap + 1
		a %= 1 << 62
		unit := (b.Window + b.PerWindow - 1) / b.PerWindow
		span := b.Range() - min(b.Range(), unit) // distances read unambiguously
		if span == 0 {
			return
		}
		d := dist % span
		c := a + d
		if dist&(1<<63) != 0 && d <= a {
			c = a - d // the clock stepped back
		}
		ua, _ := bigU(b, a)
		uc, _ := bigU(b, c)
		last, now := lowBits(ua, 64), lowBits(uc, 64)
		gt, gl := b.Refill(tokens, last&(1<<b.TickBits-1), now)

		mask := uint64(1)<<b.TickBits - 1
		wt, wl := tokens, last&mask
		switch el := new(big.Int).Sub(uc, ua); {
		case tokens == b.Cap:
			wt, wl = b.Cap, now&mask
		case el.Sign() >= 0:
			wl = now & mask
			if el.Cmp(new(big.Int).SetUint64(b.Cap-tokens)) >= 0 {
				wt = b.Cap
			} else {
				wt = tokens + el.Uint64()
			}
		}
		if gt != wt || gl != wl {
			t.Fatalf("layout %+v: Refill(%d, u(%d), u(%d)) = %d, %d; want %d, %d", b, tokens, a, c, gt, gl, wt, wl)
		}
		if c < a {
			return
		}
		mid := a + split%(c-a+1)
		um, _ := bigU(b, mid)
		t1, l1 := b.Refill(tokens, last&mask, lowBits(um, 64))
		t2, l2 := b.Refill(t1, l1, now)
		if t2 != gt || l2 != gl {
			t.Fatalf("layout %+v: refill split at %d gives %d, %d; whole %d, %d", b, mid, t2, l2, gt, gl)
		}
	})
}

// FuzzBucketWait: Wait(need, rem) is the least d with u(t+d) ≥ u(t) + need,
// checked with big.Int, for every need the limiter asks for (up to Cap plus
// a backward distance below 2^(T−1)) whose wait fits 64 bits.
func FuzzBucketWait(f *testing.F) {
	bucketSeeds(f, 0, 1)
	bucketSeeds(f, 1<<61+12345, math.MaxUint64)
	f.Fuzz(func(t *testing.T, limit, window uint64, fracBits uint8, at, need uint64) {
		b := bucketLayout(limit, window, fracBits)
		at %= 1 << 62
		need %= b.Cap + 1<<(b.TickBits-1)
		if hi, _ := bits.Mul64(need, b.Window); hi >= b.PerWindow {
			return // the wait does not fit 64 bits; the limiter never asks
		}
		_, rem := b.Units(at)
		d := b.Wait(need, rem)
		u0, _ := bigU(b, at)
		target := new(big.Int).Add(u0, new(big.Int).SetUint64(need))
		end := new(big.Int).Add(new(big.Int).SetUint64(at), new(big.Int).SetUint64(d))
		if ud, _ := bigUx(b, end); ud.Cmp(target) < 0 {
			t.Fatalf("layout %+v: Wait(%d) at %d = %d: too early", b, need, at, d)
		}
		if d > 0 {
			if ud, _ := bigUx(b, end.Sub(end, big.NewInt(1))); ud.Cmp(target) >= 0 {
				t.Fatalf("layout %+v: Wait(%d) at %d = %d: 1 ns earlier is enough", b, need, at, d)
			}
		}
	})
}
