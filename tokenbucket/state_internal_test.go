package tokenbucket

import (
	"errors"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/packed"
)

const day = 24 * time.Hour

// TestLayoutChoice pins the layouts the package documentation lists.
func TestLayoutChoice(t *testing.T) {
	for i, tc := range []struct {
		limit     int
		window    time.Duration
		fracBits  uint
		rangeDays float64
	}{
		{1, day, 28, 64},
		{1, time.Second, 20, 48.5},
		{5, time.Second, 18, 38.8},
		{3, 7 * time.Millisecond, 15, 58},
		{100, time.Minute, 16, 116.5},
		{1000, time.Millisecond, 5, 101.8},
		{1 << 16, time.Second, 4, 48.5},
		{1 << 16, time.Millisecond, 0, 12.4},
		{1 << 20, day, 8, 64},
		{1 << 20, time.Second, 0, 48.5},
		{1 << 20, time.Millisecond, 0, float64(69*time.Minute+54*time.Second) / float64(day)},
	} {
		lim, err := New(tc.limit, tc.window)
		require.NoError(t, err, "case %d", i)
		assert.Equal(t, tc.fracBits, lim.b.FracBits, "case %d", i)
		assert.InDelta(t, tc.rangeDays, float64(lim.b.Range())/float64(day), 0.05, "case %d", i)
	}
}

// TestLayoutChoiceAtItsBounds: a Range of exactly 30 days, or of exactly 4
// fill times, is enough for a fraction. At 1 per window with a burst of 1
// and F fractional bits, T = 63 − F and Range = 2^(62−2F)·window: for a
// window of 3^4·5^12·2 ns (about 39.6 s), F = 23 gives 2^17·3^4·5^12 ns, 30
// days. With a burst of 2^20, T = 33 − F and Range = 2^(52−2F)·window, 4
// fill times (2^20 windows each) at F = 10.
func TestLayoutChoiceAtItsBounds(t *testing.T) {
	for _, tc := range []struct {
		window   time.Duration
		burst    int
		fracBits uint
		rng      time.Duration
	}{
		{2 * 19775390625, 1, 23, 30 * day},
		{10 * time.Second, 1 << 20, 10, 4 << 20 * 10 * time.Second},
	} {
		lim, err := New(1, tc.window, hotlimit.WithBurst(tc.burst))
		require.NoError(t, err)
		assert.Equal(t, tc.fracBits, lim.b.FracBits, "window %v, burst %d", tc.window, tc.burst)
		assert.Equal(t, tc.rng, time.Duration(lim.b.Range()), "window %v, burst %d", tc.window, tc.burst)
	}
}

// TestLayoutRules checks the rule New follows, over the corners and random
// points of its ranges: F is the largest whose Range keeps 30 days and 4
// windows, or 0 with at least an hour and 4 windows; and the wrap guard's
// spans fit the argument in guard.go.
func TestLayoutRules(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(limit int, window time.Duration) {
		lim, err := New(limit, window)
		require.NoError(t, err, "%d per %v", limit, window)
		b := lim.b
		rng := time.Duration(b.Range())
		assert.GreaterOrEqual(t, rng, 4*window, "%d per %v", limit, window)
		if b.FracBits > 0 {
			assert.GreaterOrEqual(t, rng, preciseRange, "%d per %v", limit, window)
		} else {
			assert.GreaterOrEqual(t, rng, minRange, "%d per %v", limit, window)
		}
		if b.FracBits < packed.MaxFracBits {
			finer := packed.NewBucket(uint64(limit), uint64(limit), uint64(window), b.FracBits+1)
			r := time.Duration(finer.Range())
			assert.False(t, r >= preciseRange && r >= 4*window, "%d per %v: F+1 fits too", limit, window)
		}
		unit := int64((b.Window + b.PerWindow - 1) / b.PerWindow)
		assert.Positive(t, lim.soft, "%d per %v", limit, window)
		assert.Less(t, lim.soft, lim.hard, "%d per %v", limit, window)
		assert.Equal(t, int64(rng)/4, lim.back)
		// Readers: |t − τ| < hard + back; sweeps: s − τ < hard + window + back.
		assert.LessOrEqual(t, lim.hard+int64(window)+lim.back+unit, int64(rng), "%d per %v", limit, window)
		assert.GreaterOrEqual(t, lim.back, int64(window))
	}
	for _, limit := range []int{1, 2, 3, 5, 7, 100, 1000, 1<<16 - 1, 1 << 16, 1<<20 - 1, 1 << 20} {
		for _, window := range []time.Duration{MinWindow, 7 * time.Millisecond, time.Second, time.Minute, time.Hour, MaxWindow} {
			check(limit, window)
		}
	}
	for range 2000 {
		check(1+r.IntN(MaxLimit), MinWindow+time.Duration(r.Int64N(int64(MaxWindow-MinWindow)+1)))
	}
}

// TestLayoutRangeInFillTimes pins the margin the package documentation
// states at F = 0: the Range is at least 2^22 − 1 fill times (a 43-bit
// timestamp, 2^42 units, over a burst of MaxBurst, 2^20 units), or, where it
// reaches the 2^63 ns the limiter counts, over 291 (a fill time is at most
// MaxBurstSpan): 4 fill times always fit.
func TestLayoutRangeInFillTimes(t *testing.T) {
	const saturated = 1<<63 - 1
	r := rand.New(rand.NewPCG(5, 6))
	leastExact, leastSaturated := uint64(math.MaxUint64), uint64(math.MaxUint64)
	check := func(limit, burst uint64, window time.Duration) {
		if hi, lo := bits.Mul64(burst, uint64(window)); hi > 0 || lo > limit*uint64(MaxBurstSpan/time.Second)*uint64(time.Second) {
			return // New rejects it: longer than MaxBurstSpan to refill
		}
		b := packed.NewBucket(limit, burst, uint64(window), 0)
		fill, ok := fillTime(b)
		require.True(t, ok, "%d per %v burst %d", limit, window, burst)
		ratio := b.Range() / fill
		if b.Range() == saturated {
			leastSaturated = min(leastSaturated, ratio)
		} else {
			leastExact = min(leastExact, ratio)
		}
	}
	bursts := []uint64{1, 2, 3, 366, 1000, 1<<19 - 1, 1 << 19, 1<<19 + 1, 1<<20 - 1, MaxBurst}
	for _, burst := range bursts {
		for _, limit := range []uint64{1, 7, 1000, MaxLimit} {
			for _, window := range []time.Duration{MinWindow, time.Second, time.Hour, MaxWindow} {
				check(limit, burst, window)
			}
		}
	}
	for range 2000 {
		check(1+r.Uint64N(MaxLimit), bursts[r.IntN(len(bursts))], MinWindow+time.Duration(r.Int64N(int64(MaxWindow-MinWindow)+1)))
	}
	// 2^42 units over 2^20, less the rounding up of the fill time.
	assert.Equal(t, uint64(1)<<22-1, leastExact, "2^42 units over 2^20")
	assert.Equal(t, uint64(saturated/uint64(MaxBurstSpan)), leastSaturated, "2^63 ns over 366 days")
	assert.EqualValues(t, 291, leastSaturated)
}

// TestLayoutOutOfRange: no accepted limit and window reach it, so the rule
// is checked on its own, with a window below MinWindow.
func TestLayoutOutOfRange(t *testing.T) {
	_, err := layoutFor(1<<20, 1<<20, uint64(time.Microsecond))
	require.Error(t, err)
	assert.True(t, errors.Is(err, hotlimit.ErrInvalidConfig))
	assert.Contains(t, err.Error(), "tokenbucket: limit 1048576 per window 1µs is out of range: "+
		"a key's 43-bit timestamp spans only 4.194304s at that rate, and must span at least 1h0m0s and 4 windows; "+
		"for limit 1048576 the window must be at least 858.307µs")
	// The window it names is the least that works.
	_, err = layoutFor(1<<20, 1<<20, 858307)
	assert.NoError(t, err)
	_, err = layoutFor(1<<20, 1<<20, 858306)
	assert.Error(t, err)
}

// TestCellSize pins the per-key state: one word, no padding.
func TestCellSize(t *testing.T) {
	assert.EqualValues(t, 8, unsafe.Sizeof(cell{}))
}

// TestFreshKeyLongAfterEpoch: a key created when u(t) has gone round its
// 2^T modulus many times still starts full and refills from its first
// request. (A fresh word's timestamp, 0, is never read.)
func TestFreshKeyLongAfterEpoch(t *testing.T) {
	tw := newTwin(t, 1<<20, time.Millisecond, 0, time.Millisecond)
	tw.others = true
	period := int64(1<<tw.lim.b.TickBits) * int64(tw.lim.b.Window) / int64(tw.lim.b.PerWindow)
	require.Equal(t, int64(2*tw.lim.b.Range()), period, "2^T units of 1<<20/1ms are a whole number of nanoseconds")
	for i, at := range []int64{period, 5*period + period/2, 7 * period} {
		tw.now.Store(at)
		key := string(rune('a' + i))
		tw.take(key, 1<<20, false, false, "fresh")
		tw.now.Add(int64(500 * time.Microsecond))
		d := tw.take(key, 1<<19, false, false, "half refilled")
		assert.True(t, d.Allowed, "step %d", i)
	}
}

// TestFastReadAgreesWithRead: Allow's inlined fastRead, where it answers ok,
// returns what read returns for the same clock reading (with no lag), and it
// answers ok exactly for readings at or after the epoch, up to maxTime, and
// inside the generation's guard spans: at each edge of those ranges, and at
// the ends of int64.
func TestFastReadAgreesWithRead(t *testing.T) {
	for _, epoch := range []int64{0, 1 << 40, -1 << 40, math.MinInt64 + 1, math.MaxInt64 - 1} {
		var clock int64 = epoch
		lim, err := New(1<<20, time.Millisecond, hotlimit.WithClock(func() int64 { return clock }))
		require.NoError(t, err)
		require.Equal(t, epoch, lim.epoch)
		for _, gen := range []int64{0, 1 << 30, lim.back + 5, maxTime - lim.soft/2} {
			lim.swept.Store(gen)
			var readings []int64
			for _, d := range []int64{-lim.back - 1, -lim.back, 0, lim.soft - 1, lim.soft} {
				readings = append(readings, epoch+gen+d, epoch+gen+d+1)
			}
			readings = append(readings, epoch, epoch-1, epoch+maxTime, epoch+maxTime+1, math.MinInt64, math.MaxInt64)
			oks := 0
			for _, r := range readings {
				ft, fgen, ok := lim.fastRead(r)
				d := int64(r-epoch) - gen // wraps only where r < epoch or r − epoch > maxTime
				want := r >= epoch && uint64(r)-uint64(epoch) <= maxTime && d >= -lim.back && d < lim.soft
				assert.Equal(t, want, ok, "epoch %d gen %d reading %d", epoch, gen, r)
				if !ok {
					continue
				}
				oks++
				clock = r
				rt, rgen, lag := lim.read()
				assert.Equal(t, rt, ft, "epoch %d gen %d reading %d: t", epoch, gen, r)
				assert.Equal(t, rgen, fgen, "epoch %d gen %d reading %d: gen", epoch, gen, r)
				assert.Zero(t, lag, "epoch %d gen %d reading %d: lag", epoch, gen, r)
				assert.Equal(t, gen, lim.swept.Load(), "read ran no sweep")
			}
			if gen < math.MaxInt64-max(epoch, 0)-lim.soft { // epoch + gen + soft fits an int64
				assert.Positive(t, oks, "epoch %d gen %d: some readings take the fast path", epoch, gen)
			}
		}
	}
}

// TestTimeStopsAtItsHorizon: the limiter's time runs up to maxTime, 2^62 ns
// (about 146 years) after the epoch, and stands still from there. At 1 per
// second: a key drained 2 s before the horizon has refilled 1 s later, and
// waits for a refill that ends before the horizon; one drained 0.5 s before
// it refills only that 0.5 s, however late the clock reads, and its wait
// says Never.
func TestTimeStopsAtItsHorizon(t *testing.T) {
	const horizon = int64(1) << 62
	var now int64 // the epoch
	lim, err := New(1, time.Second, hotlimit.WithClock(func() int64 { return now }))
	require.NoError(t, err)
	now = horizon - int64(2*time.Second)
	require.True(t, lim.Allow("k"))
	now += int64(time.Second)
	assert.True(t, lim.Allow("k"), "1 s refilled, 1 s before the horizon")
	now += int64(500 * time.Millisecond)
	d := lim.Take("k", 1)
	require.False(t, d.Allowed)
	assert.LessOrEqual(t, d.RetryAfter, 500*time.Millisecond, "the refill ends at the horizon, not after")
	assert.Greater(t, d.RetryAfter, 499*time.Millisecond)
	require.True(t, lim.Take("j", 1).Allowed, "drained 0.5 s before the horizon")
	now = horizon + int64(time.Hour)
	d = lim.Take("j", 1)
	assert.False(t, d.Allowed, "only 0.5 s refilled: time stood still at the horizon")
	assert.Equal(t, hotlimit.Never, d.RetryAfter)
}
