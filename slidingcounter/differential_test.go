package slidingcounter_test

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

var diffWindows = []time.Duration{
	slidingcounter.MinWindow, 7 * ms, 1 << 20, time.Second, time.Hour, slidingcounter.MaxWindow,
}

// diffRun is one random sequence: a limiter and the model side by side.
type diffRun struct {
	rng    *rand.Rand
	now    atomic.Int64
	lim    *slidingcounter.Limiter
	model  *models.SlidingCounter
	limit  int
	window int64
	far    int64 // how far ahead tick jumped in all
	keys   []string
	// held are receipts of admitted takes not yet refunded.
	held []held
}

// held is a receipt a sequence keeps to refund later, and its key.
type held struct {
	key string
	r   hotlimit.Receipt
}

func newDiffRun(t *testing.T, rng *rand.Rand, opts ...hotlimit.Option) *diffRun {
	r := &diffRun{rng: rng, keys: []string{"a", "b", "c"}}
	r.limit = 1 + rng.IntN(8)
	switch rng.IntN(10) {
	case 0:
		r.limit = 50 + rng.IntN(100)
	case 1:
		r.limit = slidingcounter.MaxLimit - rng.IntN(3)
	}
	window := diffWindows[rng.IntN(len(diffWindows))]
	r.window = int64(window)
	// Start anywhere within ±2^58 ns, sometimes on a boundary; a sequence
	// moves the clock by at most 3·Window per step, so it stays below
	// 2^58 + 240·MaxWindow < 2^63 − 4·MaxWindow.
	start := rng.Int64N(1<<59) - 1<<58
	if rng.IntN(3) == 0 {
		start -= start % r.window
	}
	r.now.Store(start)
	var err error
	r.lim, err = slidingcounter.New(r.limit, window, append([]hotlimit.Option{hotlimit.WithClock(r.now.Load)}, opts...)...)
	require.NoError(t, err)
	r.model = models.NewSlidingCounter(r.limit, window)
	return r
}

// tick moves the clock: not at all, a little, within or across windows, far
// ahead, to a boundary or just before one, and sometimes back (when back is
// set).
func (r *diffRun) tick(back bool) {
	w, now := r.window, r.now.Load()
	var d int64
	switch r.rng.IntN(10) {
	case 0, 1:
	case 2:
		d = 1 + r.rng.Int64N(3)
	case 3, 4:
		d = r.rng.Int64N(w / 3)
	case 5: // to the next boundary, or 1 ns before it
		d = w - (now%w+w)%w - r.rng.Int64N(2)
	case 6:
		d = r.rng.Int64N(3 * w)
		if room := r.farRoom(); room > 0 && r.rng.IntN(8) == 0 {
			// Far ahead, and sometimes onto a boundary.
			d = r.rng.Int64N(room)
			if r.rng.IntN(2) == 0 {
				d -= (now + d) % w
			}
			r.far += d
		}
	case 7:
		d = w
	default:
		if back {
			if r.rng.IntN(2) == 0 {
				d = -1 - r.rng.Int64N(3)
			} else {
				d = -r.rng.Int64N(3 * w)
			}
		} else {
			d = r.rng.Int64N(w / 2)
		}
	}
	r.now.Add(d)
}

// farRoom is how far ahead the clock may still jump in one sequence: a
// sequence moves the clock by at most 3·Window per step besides, 80 steps
// at most, and a key's stored window must stay within 2^29 − 2 windows of
// the clock's (the most the index tells from a step back; see the package
// documentation); and 2^60 ns in all, which keeps the clock below
// 2^58 + 240·MaxWindow + 2^60 < 2^63 − 4·MaxWindow (see newDiffRun).
func (r *diffRun) farRoom() int64 {
	return min(1<<29-300, (1<<60)/r.window)*r.window - r.far
}

// randN returns a random n in [-1, limit+1], biased towards small values and
// the quota left.
func (r *diffRun) randN() int {
	switch r.rng.IntN(4) {
	case 0:
		return r.rng.IntN(r.limit+3) - 1
	case 1:
		return r.limit - r.rng.IntN(3)
	default:
		return 1 + r.rng.IntN(min(r.limit, 4))
	}
}

// call makes one random call on both and reports whether they agree. A
// quarter of the calls are Allow.
func (r *diffRun) call(t *testing.T, seq, step int) bool {
	key := r.keys[r.rng.IntN(len(r.keys))]
	now := r.now.Load()
	if r.rng.IntN(4) == 0 {
		want := r.model.Take(key, 1, now).Allowed
		return assert.Equal(t, want, r.lim.Allow(key), "seq %d step %d: Allow(%q) at %d", seq, step, key, now)
	}
	n := r.randN()
	want := r.model.Take(key, n, now)
	return assert.Equal(t, want, r.lim.Take(key, n), "seq %d step %d: Take(%q, %d) at %d", seq, step, key, n, now)
}

// takeReceipt takes with a receipt on both, keeps the receipt of an
// admitted take to refund later, and reports whether the Decisions and the
// receipts agree.
func (r *diffRun) takeReceipt(t *testing.T, seq, step int) bool {
	key := r.keys[r.rng.IntN(len(r.keys))]
	now := r.now.Load()
	n := r.randN()
	want, wantR := r.model.TakeReceipt(key, n, now)
	d, rc := r.lim.TakeReceipt(key, n)
	if !assert.Equal(t, want, d, "seq %d step %d: TakeReceipt(%q, %d) at %d", seq, step, key, n, now) ||
		!assert.Equal(t, wantR, rc, "seq %d step %d: receipt of TakeReceipt(%q, %d) at %d", seq, step, key, n, now) {
		return false
	}
	if rc.N > 0 {
		r.held = append(r.held, held{key, rc})
	}
	return true
}

// refund gives back a random held receipt, of which there must be one, on
// both at now.
func (r *diffRun) refund(now int64) {
	i := r.rng.IntN(len(r.held))
	h := r.held[i]
	r.held = append(r.held[:i], r.held[i+1:]...)
	r.model.Refund(h.key, h.r, now)
	r.lim.Refund(h.key, h.r)
}

// TestDifferential plays random sequences of clock steps (backwards ones
// included), calls and sweeps against the sequential model: every Decision,
// every Sweep count and every Len must agree.
func TestDifferential(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 400
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for seq := range seqs {
		r := newDiffRun(t, rng)
		for step := range 80 {
			r.tick(true)
			if rng.IntN(15) == 0 {
				now := r.now.Load()
				if !assert.Equal(t, r.model.Sweep(now), r.lim.Sweep(), "seq %d step %d: Sweep at %d", seq, step, now) {
					return
				}
				if !assert.Equal(t, r.model.Len(), r.lim.Len(), "seq %d step %d: Len", seq, step) {
					return
				}
				continue
			}
			if !r.call(t, seq, step) {
				return
			}
		}
	}
}

// TestSweepChangesNoDecision: with a clock that never goes back, sweeping at
// random changes no decision: the limiter agrees with a model that never
// forgets a key.
func TestSweepChangesNoDecision(t *testing.T) {
	seqs := 1500
	if testing.Short() {
		seqs = 300
	}
	rng := rand.New(rand.NewPCG(3, 4))
	swept := 0
	for seq := range seqs {
		r := newDiffRun(t, rng)
		for step := range 80 {
			r.tick(false)
			if rng.IntN(6) == 0 {
				swept += r.lim.Sweep()
				continue
			}
			if !r.call(t, seq, step) {
				return
			}
		}
		assert.LessOrEqual(t, r.lim.Len(), r.model.Len(), "seq %d", seq)
	}
	assert.Greater(t, swept, seqs, "the sweeps evicted keys")
}

// TestRetryAfterIsExact brings keys to random states, backwards clocks and
// negative clocks included, and checks each denial of 1 ≤ n ≤ limit: RetryAfter
// − 1 ns later the same Take is still denied; RetryAfter later it passes. It
// checks ResetAfter the same way with Take(key, limit), which passes exactly
// when the estimate is zero. Denials within the current window (prev's weight
// decaying) and at later windows must both occur.
func TestRetryAfterIsExact(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 400
	}
	rng := rand.New(rand.NewPCG(5, 6))
	checked, within := 0, 0
	for seq := range seqs {
		r := newDiffRun(t, rng)
		for step := range 30 {
			r.tick(true)
			key := r.keys[rng.IntN(len(r.keys))]
			n := 1 + rng.IntN(r.limit)
			now := r.now.Load()
			want := r.model.Take(key, n, now)
			d := r.lim.Take(key, n)
			if !assert.Equal(t, want, d, "seq %d step %d", seq, step) {
				return
			}
			if d.Allowed {
				continue
			}
			checked++
			if (now%r.window+r.window)%r.window+int64(d.RetryAfter) < r.window {
				within++
			}
			require.Positive(t, d.RetryAfter, "seq %d step %d", seq, step)
			require.GreaterOrEqual(t, d.ResetAfter, d.RetryAfter, "seq %d step %d", seq, step)
			r.now.Store(now + int64(d.ResetAfter) - 1)
			assert.Less(t, r.lim.Take(key, 0).Remaining, r.limit, "seq %d step %d: ResetAfter-1ns", seq, step)
			r.now.Store(now + int64(d.ResetAfter))
			assert.Equal(t, r.limit, r.lim.Take(key, 0).Remaining, "seq %d step %d: ResetAfter", seq, step)
			r.now.Store(now + int64(d.RetryAfter) - 1)
			assert.False(t, r.lim.Take(key, n).Allowed, "seq %d step %d: RetryAfter-1ns", seq, step)
			r.now.Store(now + int64(d.RetryAfter))
			assert.True(t, r.lim.Take(key, n).Allowed, "seq %d step %d: RetryAfter", seq, step)
			r.model.Take(key, n, now+int64(d.RetryAfter))
		}
	}
	assert.Greater(t, checked, seqs, "denials were checked")
	assert.Greater(t, within, checked/10, "some retries fall within the current window")
	assert.Less(t, within, checked, "some retries fall in a later window")
}

// TestAutoSweepChangesNoDecision: with a clock that never goes back, the
// evictions of the incremental sweep (the kill function the limiter gives
// auto-sweep steps and key-cap walks, judged at their own clock reading)
// change no decision: a limiter with WithAutoSweep(1), on enough keys that
// insertions and emptying refunds pay for walks often, agrees with a model
// that never forgets a key, receipts included.
func TestAutoSweepChangesNoDecision(t *testing.T) {
	seqs := 400
	if testing.Short() {
		seqs = 100
	}
	rng := rand.New(rand.NewPCG(9, 10))
	keys := make([]string, 48)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	evicted := 0
	for seq := range seqs {
		r := newDiffRun(t, rng, hotlimit.WithAutoSweep(1))
		r.keys = keys
		for step := range 200 {
			r.tick(false)
			now := r.now.Load()
			switch p := rng.IntN(10); {
			case p < 3 && len(r.held) > 0:
				r.refund(now)
			case p < 7:
				if !r.takeReceipt(t, seq, step) {
					return
				}
			default:
				if !r.call(t, seq, step) {
					return
				}
			}
		}
		evicted += r.model.Len() - r.lim.Len()
	}
	assert.Greater(t, evicted, seqs, "the auto-sweep evicted keys the model holds")
}

// TestDifferentialWithRefunds plays random sequences of clock steps
// (backwards ones included), takes with receipts, refunds of them (each at
// most once, some long after) and sweeps against the sequential model: every
// Decision, every receipt, every Sweep count and every Len must agree.
func TestDifferentialWithRefunds(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 400
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for seq := range seqs {
		r := newDiffRun(t, rng)
		for step := range 80 {
			r.tick(true)
			now := r.now.Load()
			switch p := rng.IntN(20); {
			case p == 0:
				if !assert.Equal(t, r.model.Sweep(now), r.lim.Sweep(), "seq %d step %d: Sweep at %d", seq, step, now) ||
					!assert.Equal(t, r.model.Len(), r.lim.Len(), "seq %d step %d: Len", seq, step) {
					return
				}
			case p < 7 && len(r.held) > 0:
				r.refund(now)
			case p < 14:
				if !r.takeReceipt(t, seq, step) {
					return
				}
			default:
				if !r.call(t, seq, step) {
					return
				}
			}
		}
	}
}

// TestDifferentialAtTheEnds plays random sequences of calls, sweeps, refunds
// and clock steps within a few windows of either end of int64, and from one
// end to the other, against the sequential model: every Decision and every
// receipt must agree (see limitertest.DifferentialAtTheEnds).
func TestDifferentialAtTheEnds(t *testing.T) {
	limitertest.DifferentialAtTheEnds(t, limitertest.Adapt(slidingcounter.New), models.NewSlidingCounter, slidingcounter.MaxLimit, slidingcounter.MinWindow, slidingcounter.MaxWindow)
}
