package fixedwindow_test

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

var diffWindows = []time.Duration{
	fixedwindow.MinWindow, 7 * ms, 1 << 20, time.Second, time.Hour, fixedwindow.MaxWindow,
}

// diffRun is one random sequence: a limiter and the model side by side.
type diffRun struct {
	rng    *rand.Rand
	now    atomic.Int64
	lim    *fixedwindow.Limiter
	model  *models.FixedWindow
	limit  int
	window int64
	keys   []string
	// held are receipts of admitted takes not yet refunded.
	held []heldReceipt
}

type heldReceipt struct {
	key string
	r   hotlimit.Receipt
}

func newDiffRun(t *testing.T, rng *rand.Rand) *diffRun {
	r := &diffRun{rng: rng, keys: []string{"a", "b", "c"}}
	r.limit = 1 + rng.IntN(5)
	if rng.IntN(10) == 0 {
		r.limit = 50 + rng.IntN(100)
	}
	window := diffWindows[rng.IntN(len(diffWindows))]
	r.window = int64(window)
	// Start anywhere within ±2^58 ns, sometimes on a boundary; a sequence
	// moves the clock by at most 3·Window per step, so it stays below
	// 2^58 + 240·MaxWindow < 2^63 − MaxWindow.
	start := rng.Int64N(1<<59) - 1<<58
	if rng.IntN(3) == 0 {
		start -= start % r.window
	}
	r.now.Store(start)
	var err error
	r.lim, err = fixedwindow.New(r.limit, window, hotlimit.WithClock(r.now.Load))
	require.NoError(t, err)
	r.model = models.NewFixedWindow(r.limit, window)
	return r
}

// tick moves the clock: not at all, a little, within or across windows, to a
// boundary or just before one, and sometimes back (when back is set).
func (r *diffRun) tick(back bool) {
	w, now := r.window, r.now.Load()
	var d int64
	switch r.rng.IntN(10) {
	case 0, 1:
	case 2:
		d = 1 + r.rng.Int64N(3)
	case 3, 4:
		d = r.rng.Int64N(w)
	case 5: // to the next boundary, or 1 ns before it
		d = w - (now%w+w)%w - r.rng.Int64N(2)
	case 6:
		d = r.rng.Int64N(3 * w)
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

// call makes one random call on both and reports whether they agree, the
// receipts of takes included. n lies in [-1, limit+1]; a quarter of the
// calls are Allow.
func (r *diffRun) call(t *testing.T, seq, step int) bool {
	key := r.keys[r.rng.IntN(len(r.keys))]
	now := r.now.Load()
	if r.rng.IntN(4) == 0 {
		want := r.model.Take(key, 1, now).Allowed
		return assert.Equal(t, want, r.lim.Allow(key), "seq %d step %d: Allow(%q) at %d", seq, step, key, now)
	}
	n := r.rng.IntN(r.limit+3) - 1
	want, wantR := r.model.TakeReceipt(key, n, now)
	got, rc := r.lim.TakeReceipt(key, n)
	if rc.N > 0 {
		r.held = append(r.held, heldReceipt{key, rc})
	}
	return assert.Equal(t, want, got, "seq %d step %d: Take(%q, %d) at %d", seq, step, key, n, now) &&
		assert.Equal(t, wantR, rc, "seq %d step %d: receipt of Take(%q, %d) at %d", seq, step, key, n, now)
}

// refund gives back a random held receipt (when there is one) on both, then
// compares a report of its key, and reports whether they agree.
func (r *diffRun) refund(t *testing.T, seq, step int) bool {
	if len(r.held) == 0 {
		return true
	}
	i := r.rng.IntN(len(r.held))
	h := r.held[i]
	r.held = append(r.held[:i], r.held[i+1:]...)
	now := r.now.Load()
	r.lim.Refund(h.key, h.r)
	r.model.Refund(h.key, h.r, now)
	return assert.Equal(t, r.model.Take(h.key, 0, now), r.lim.Take(h.key, 0),
		"seq %d step %d: report after Refund(%q, %+v) at %d", seq, step, h.key, h.r, now)
}

// TestDifferential plays random sequences of clock steps (backwards ones
// included), calls, refunds of earlier takes and sweeps against the
// sequential model: every Decision, every receipt, every report after a
// refund, every Sweep count and every Len must agree.
func TestDifferential(t *testing.T) {
	seqs := 4000
	if testing.Short() {
		seqs = 500
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
			if rng.IntN(6) == 0 {
				if !r.refund(t, seq, step) {
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
	seqs := 2000
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
// − 1 ns later the same Take is still denied; RetryAfter later it passes.
func TestRetryAfterIsExact(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 400
	}
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
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
			require.Positive(t, d.RetryAfter, "seq %d step %d", seq, step)
			r.now.Store(now + int64(d.RetryAfter) - 1)
			assert.False(t, r.lim.Take(key, n).Allowed, "seq %d step %d: RetryAfter-1ns", seq, step)
			r.now.Store(now + int64(d.RetryAfter))
			assert.True(t, r.lim.Take(key, n).Allowed, "seq %d step %d: RetryAfter", seq, step)
			r.model.Take(key, n, now+int64(d.RetryAfter))
		}
	}
	assert.Greater(t, checked, seqs, "denials were checked")
}

// TestDifferentialAtTheEnds plays random sequences of calls, sweeps, refunds
// and clock steps within a few windows of either end of int64, and from one
// end to the other, against the sequential model: every Decision and every
// receipt must agree (see limitertest.DifferentialAtTheEnds).
func TestDifferentialAtTheEnds(t *testing.T) {
	limitertest.DifferentialAtTheEnds(t, limitertest.Adapt(fixedwindow.New), models.NewFixedWindow, fixedwindow.MaxLimit, fixedwindow.MinWindow, fixedwindow.MaxWindow)
}
