package limitertest

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

// WindowModel is the sequential model of a windowed limiter (a fixed
// window, a sliding counter) that DifferentialAtTheEnds plays against: the
// Decision and receipt of a Take, a refund and a Sweep, each at a reading.
type WindowModel interface {
	TakeReceipt(key string, n int, now int64) (hotlimit.Decision, hotlimit.Receipt)
	Refund(key string, r hotlimit.Receipt, now int64)
	Sweep(now int64) int
}

// DifferentialAtTheEnds is for the windowed algorithms (fixed window,
// sliding counter), whose limiters newLimiter builds, giving receipts
// (hotlimit.Refunder), of up to maxLimit per window in [minWindow,
// maxWindow]. It plays random sequences of calls, sweeps, refunds and clock
// steps (back ones included) within a few windows of either end of int64,
// and for windows of an hour or more from one end to the other, readings
// math.MinInt64 and math.MaxInt64 included, against newModel's sequential
// model: every Decision, Never included, and every receipt must agree (a
// receipt taken behind the key's window names that window's start, also
// from the first window of the clock's range, which starts before
// math.MinInt64, or more than math.MaxInt64 after the reading). Windows
// include ones whose boundaries fall on math.MaxInt64 − 1, math.MaxInt64
// and 2^63, where waits end exactly at the last reading or 1 ns past it;
// denials with a finite RetryAfter ending at math.MaxInt64 and with Never,
// receipts taken behind the key's window in the first window of the range,
// and receipts naming a start more than math.MaxInt64 after the reading
// must all occur.
func DifferentialAtTheEnds[M WindowModel](t *testing.T, newLimiter Constructor, newModel func(limit int, window time.Duration) M,
	maxLimit int, minWindow, maxWindow time.Duration) {
	t.Helper()
	seqs := 2000
	if testing.Short() {
		seqs = 300
	}
	windows := []time.Duration{
		minWindow, 7 * time.Millisecond, 153092023, 4294967294, 1 << 30, time.Second, time.Hour, maxWindow,
	}
	type held struct {
		key string
		r   hotlimit.Receipt
	}
	rng := rand.New(rand.NewPCG(7, 8))
	atEnd, nevers, firstBehind, across := 0, 0, 0, 0
	for seq := range seqs {
		limit := 1 + rng.IntN(6)
		if rng.IntN(8) == 0 {
			limit = maxLimit - rng.IntN(3)
		}
		window := windows[rng.IntN(len(windows))]
		w := int64(window)
		first := floorDiv(math.MinInt64, w) // the first window's index
		high := rng.IntN(2) == 0
		var start int64
		if high {
			start = math.MaxInt64 - rng.Int64N(4*w)
			if rng.IntN(4) == 0 {
				start = math.MaxInt64 - rng.Int64N(3)
			}
		} else {
			start = math.MinInt64 + rng.Int64N(4*w)
			if rng.IntN(4) == 0 {
				start = math.MinInt64 + rng.Int64N(3)
			}
		}
		var now atomic.Int64
		now.Store(start)
		keyed, err := newLimiter(limit, window, now.Load)
		require.NoError(t, err)
		lim, ok := keyed.(hotlimit.Refunder)
		require.True(t, ok, "the limiter gives receipts")
		model := newModel(limit, window)
		var receipts []held
		for step := range 60 {
			// A step of up to two windows either way, to a boundary or
			// 1 ns before one, or to an end, saturating at the ends.
			x := now.Load()
			switch rng.IntN(8) {
			case 0:
			case 1:
				// To an end; at times, for windows of an hour or more,
				// to the other one, fewer than 2^23 windows away: the
				// word's index, kept modulo 2^30 or more, still tells
				// back from forward.
				x = math.MaxInt64
				if high == (w >= int64(time.Hour) && rng.IntN(3) == 0) {
					x = math.MinInt64
				}
			case 2:
				if r := (x%w + w) % w; x <= math.MaxInt64-(w-r) {
					x += w - r - rng.Int64N(2)
				}
			default:
				d := rng.Int64N(2*w) - w
				if rng.IntN(3) == 0 {
					d = rng.Int64N(7) - 3
				}
				switch {
				case d > 0 && x > math.MaxInt64-d:
					x = math.MaxInt64
				case d < 0 && x < math.MinInt64-d:
					x = math.MinInt64
				default:
					x += d
				}
			}
			now.Store(x)
			if rng.IntN(12) == 0 {
				if !assert.Equal(t, model.Sweep(x), keyed.Sweep(), "seq %d step %d: Sweep at %d", seq, step, x) {
					return
				}
				continue
			}
			if len(receipts) > 0 && rng.IntN(5) == 0 {
				i := rng.IntN(len(receipts))
				h := receipts[i]
				receipts = append(receipts[:i], receipts[i+1:]...)
				model.Refund(h.key, h.r, x)
				lim.Refund(h.key, h.r)
				continue
			}
			key := []string{"a", "b"}[rng.IntN(2)]
			n := 1 + rng.IntN(limit)
			switch rng.IntN(6) {
			case 0:
				n = rng.IntN(limit+3) - 1
			case 1:
				n = limit
			}
			want, wantR := model.TakeReceipt(key, n, x)
			d, rc := lim.TakeReceipt(key, n)
			if !assert.Equal(t, want, d, "seq %d step %d: Take(%q, %d) at %d, limit %d window %d", seq, step, key, n, x, limit, w) ||
				!assert.Equal(t, wantR, rc, "seq %d step %d: receipt of Take(%q, %d) at %d, limit %d window %d", seq, step, key, n, x, limit, w) {
				return
			}
			if rc.N > 0 {
				receipts = append(receipts, held{key, rc})
				if rc.At != x && floorDiv(x, w) == first {
					firstBehind++
				}
				if uint64(rc.At)-uint64(x) > math.MaxInt64 {
					across++
				}
			}
			if !d.Allowed && n >= 1 && n <= limit {
				switch {
				case d.RetryAfter == hotlimit.Never:
					nevers++
				case x == math.MaxInt64-int64(d.RetryAfter):
					atEnd++
				}
			}
		}
	}
	assert.Positive(t, atEnd, "denials whose RetryAfter ends at math.MaxInt64")
	assert.Positive(t, nevers, "denials with Never within the limit")
	assert.Positive(t, firstBehind, "receipts taken behind the key's window from the first window")
	assert.Positive(t, across, "receipts naming a start more than math.MaxInt64 after the reading")
}
