package gcra_test

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/models"
)

// diffConfigs are the policies of the differential tests, all exact (see
// the package documentation): burst 0 is the default, the limit.
var diffConfigs = []diffConfig{
	{5, 0, time.Second},
	{5, 7, time.Second},
	{3, 0, 7 * time.Millisecond}, // scale 3
	{12, 2, time.Second},         // scale 3
	{7, 0, time.Second},          // scale 7
	{100, 10, time.Minute},
	{1, 0, 24 * time.Hour},
	{1, 4, time.Millisecond},
	{1000, 0, time.Millisecond},
	{16, 1, 15*time.Millisecond + 1}, // scale 16
	{17, 0, time.Second},             // fine ticks, 2^30 per T
	{1 << 20, 3, time.Millisecond},   // fine ticks, 16 per T
}

// diffConfig is a policy: limit per window, with a burst (0: the limit).
type diffConfig struct {
	limit, burst int
	window       time.Duration
}

// diffRun is one random sequence: a limiter and the model side by side.
type diffRun struct {
	rng          *rand.Rand
	now          atomic.Int64
	lim          *gcra.Limiter
	model        *models.GCRA
	limit, burst int
	window       time.Duration
	epoch        int64
	keys         []string
	receipts     []held // for callOrRefund
}

func newDiffRun(t *testing.T, rng *rand.Rand, ci int) *diffRun {
	return newDiffRunOf(t, rng, diffConfigs[ci])
}

// newDiffRunOf starts a run of cfg at a random epoch. The model reads its
// clock in the limiter's ticks when they are fine; exact ticks (a whole
// number per nanosecond) floor nothing, and there the model is the exact one.
func newDiffRunOf(t *testing.T, rng *rand.Rand, cfg diffConfig) *diffRun {
	r := &diffRun{rng: rng, keys: []string{"a", "b", "c"}, limit: cfg.limit, burst: cfg.burst, window: cfg.window}
	if r.burst == 0 {
		r.burst = r.limit
	}
	r.epoch = rng.Int64N(2e15) - 1e15
	r.now.Store(r.epoch)
	var err error
	r.lim, err = gcra.New(cfg.limit, cfg.window, hotlimit.WithClock(r.now.Load), hotlimit.WithBurst(cfg.burst))
	require.NoError(t, err)
	r.model = models.NewGCRA(r.limit, r.burst, r.window, r.epoch)
	if num, den := gcra.TicksOf(r.lim); den != 1 {
		r.model.Ticks(num, den)
	}
	return r
}

// tick moves the clock by a random step: zero, a nanosecond or three, a
// fraction of T, across token and window boundaries, far ahead (years); and
// back (when back is set), sometimes before the epoch.
func (r *diffRun) tick(back bool) {
	tok := int64(r.window) / int64(r.limit)
	var d int64
	switch p := r.rng.IntN(100); {
	case p < 15:
	case p < 25:
		d = 1 + r.rng.Int64N(3)
	case p < 50:
		d = r.rng.Int64N(2*tok + 1)
	case p < 60:
		d = r.rng.Int64N(tok/4 + 1)
	case p < 72:
		d = r.rng.Int64N(2*int64(r.window) + 1)
	case p < 77:
		d = tok * (1 + r.rng.Int64N(3)) // whole tokens
	case p < 82:
		d = int64(r.window)
		if r.rng.IntN(4) == 0 && r.now.Load()-r.epoch < 1<<56 {
			d = r.rng.Int64N(1 << 56) // far ahead: years, within the limiter's time
		}
	default:
		if back {
			d = -r.rng.Int64N(min(int64(r.window), 3*tok) + 1)
		} else {
			d = r.rng.Int64N(tok + 1)
		}
	}
	r.now.Add(d)
}

// randomN draws a request size in [-1, burst+1], edges and small sizes often.
func randomN(rng *rand.Rand, burst int) int {
	switch p := rng.IntN(100); {
	case p < 5:
		return -1
	case p < 12:
		return 0
	case p < 17:
		return burst + 1
	case p < 22:
		return burst
	case p < 60:
		return 1
	default:
		return 1 + rng.IntN(burst)
	}
}

// call makes one random call on both and reports whether they agree; a
// quarter of the calls are Allow.
func (r *diffRun) call(t *testing.T, msg string) bool {
	key := r.keys[r.rng.IntN(len(r.keys))]
	now := r.now.Load()
	if r.rng.IntN(4) == 0 {
		want := r.model.Take(key, 1, now).Allowed
		return assert.Equal(t, want, r.lim.Allow(key), "%s: Allow(%q) at %d", msg, key, now-r.epoch)
	}
	n := randomN(r.rng, r.burst)
	want := r.model.Take(key, n, now)
	return assert.Equal(t, want, r.lim.Take(key, n), "%s: Take(%q, %d) at %d", msg, key, n, now-r.epoch)
}

// TestDifferential plays random sequences of clock steps (backwards ones
// included), calls and sweeps against the sequential model: every Decision,
// every Sweep count and every Len must agree.
func TestDifferential(t *testing.T) {
	seqs := 150
	if testing.Short() {
		seqs = 30
	}
	for ci, cfg := range diffConfigs {
		t.Run(fmt.Sprintf("limit=%d/burst=%d/window=%v", cfg.limit, cfg.burst, cfg.window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 1))
			for seq := range seqs {
				r := newDiffRun(t, rng, ci)
				for step := range 100 {
					r.tick(true)
					msg := fmt.Sprintf("seq %d step %d", seq, step)
					if rng.IntN(20) == 0 {
						now := r.now.Load()
						if !assert.Equal(t, r.model.Sweep(now), r.lim.Sweep(), "%s: Sweep", msg) ||
							!assert.Equal(t, r.model.Len(), r.lim.Len(), "%s: Len", msg) {
							return
						}
						continue
					}
					if !r.call(t, msg) {
						return
					}
				}
			}
		})
	}
}

// TestSweepChangesNoDecision: with a clock that never goes back, sweeping at
// random changes no decision: the limiter agrees with a model that never
// forgets a key.
func TestSweepChangesNoDecision(t *testing.T) {
	seqs := 200
	if testing.Short() {
		seqs = 40
	}
	rng := rand.New(rand.NewPCG(3, 4))
	swept := 0
	for seq := range seqs {
		r := newDiffRun(t, rng, rng.IntN(len(diffConfigs)))
		for step := range 100 {
			r.tick(false)
			if rng.IntN(5) == 0 {
				swept += r.lim.Sweep()
				continue
			}
			if !r.call(t, fmt.Sprintf("seq %d step %d", seq, step)) {
				return
			}
		}
		assert.LessOrEqual(t, r.lim.Len(), r.model.Len(), "seq %d", seq)
	}
	assert.Greater(t, swept, seqs, "the sweeps evicted keys")
}

// TestRetryAfterIsExact brings keys to random states, backwards clocks and
// clocks before the epoch included, and checks each denial of 1 ≤ n ≤ burst:
// RetryAfter − 1 ns later the same Take is still denied; RetryAfter later it
// passes.
func TestRetryAfterIsExact(t *testing.T) {
	seqs := 300
	if testing.Short() {
		seqs = 60
	}
	rng := rand.New(rand.NewPCG(5, 6))
	checked := 0
	for seq := range seqs {
		r := newDiffRun(t, rng, rng.IntN(len(diffConfigs)))
		for step := range 40 {
			r.tick(true)
			key := r.keys[rng.IntN(len(r.keys))]
			n := 1 + rng.IntN(r.burst)
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

// TestResetAfterIsExact: ResetAfter − 1 ns later the key is not yet full
// (Remaining below the burst or a positive ResetAfter); ResetAfter later it
// is, and a Sweep evicts it.
func TestResetAfterIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for seq := range 200 {
		r := newDiffRun(t, rng, rng.IntN(len(diffConfigs)))
		for range 1 + rng.IntN(5) {
			r.tick(false)
			r.lim.Take("k", 1+rng.IntN(r.burst))
		}
		now := r.now.Load()
		d := r.lim.Take("k", 0)
		if d.ResetAfter == 0 {
			continue
		}
		r.now.Store(now + int64(d.ResetAfter) - 1)
		assert.Positive(t, r.lim.Take("k", 0).ResetAfter, "seq %d", seq)
		assert.Zero(t, r.lim.Sweep(), "seq %d: not full yet", seq)
		r.now.Store(now + int64(d.ResetAfter))
		assert.Equal(t, hotlimit.Decision{Allowed: true, Limit: r.limit, Remaining: r.burst}, r.lim.Take("k", 0), "seq %d", seq)
		assert.Equal(t, 1, r.lim.Sweep(), "seq %d: full", seq)
	}
}

// TestFineTicksNeverFaster: for a policy on fine ticks (1<<20 per second,
// T = 2^14 ticks), a drained key refills no more than the exact rate, and
// less by under a token: the floors of the clock do not add up.
func TestFineTicksNeverFaster(t *testing.T) {
	const limit = 1 << 20
	var now atomic.Int64
	lim, err := gcra.New(limit, time.Second, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	num, den := gcra.TicksOf(lim)
	require.NotEqual(t, uint64(1), den, "fine ticks")
	require.Equal(t, uint64(1<<14)*den, num*uint64(time.Second)/limit, "T = 2^14 ticks")
	require.True(t, lim.Take("k", limit).Allowed)
	require.False(t, lim.Allow("k"))
	for _, d := range []time.Duration{time.Millisecond, time.Second / 3, time.Second - 1, time.Second} {
		now.Store(int64(d))
		got := lim.Take("k", 0).Remaining
		exact := int(int64(limit) * int64(d) / int64(time.Second))
		assert.LessOrEqual(t, got, exact, "after %v", d)
		assert.GreaterOrEqual(t, got, exact-1, "after %v", d)
	}
}

// TestDifferentialWithRefunds plays random sequences of clock steps
// (backwards ones included, before the epoch too), takes with receipts,
// refunds of them (each at most once, some long after) and sweeps against the
// sequential model: every Decision, every Sweep count and every Len must
// agree.
func TestDifferentialWithRefunds(t *testing.T) {
	seqs := 150
	if testing.Short() {
		seqs = 30
	}
	for ci, cfg := range diffConfigs {
		t.Run(fmt.Sprintf("limit=%d/burst=%d/window=%v", cfg.limit, cfg.burst, cfg.window), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			for seq := range seqs {
				r := newDiffRun(t, rng, ci)
				for step := range 100 {
					r.tick(true)
					if !r.callOrRefund(t, fmt.Sprintf("seq %d step %d", seq, step)) {
						return
					}
				}
			}
		})
	}
}

// held is a receipt kept for a later refund.
type held struct {
	key string
	r   hotlimit.Receipt
}

// callOrRefund makes one random step on both and reports whether they
// agree: a sweep, a refund of a receipt taken before (each at most once),
// a take with a receipt, or a call.
func (r *diffRun) callOrRefund(t *testing.T, msg string) bool {
	now := r.now.Load()
	switch p := r.rng.IntN(20); {
	case p == 0:
		return assert.Equal(t, r.model.Sweep(now), r.lim.Sweep(), "%s: Sweep", msg) &&
			assert.Equal(t, r.model.Len(), r.lim.Len(), "%s: Len", msg)
	case p < 7 && len(r.receipts) > 0:
		i := r.rng.IntN(len(r.receipts))
		h := r.receipts[i]
		r.receipts = append(r.receipts[:i], r.receipts[i+1:]...)
		r.model.Refund(h.key, h.r, now)
		r.lim.Refund(h.key, h.r)
		return true
	case p < 14:
		key := r.keys[r.rng.IntN(len(r.keys))]
		n := randomN(r.rng, r.burst)
		want := r.model.Take(key, n, now)
		d, rc := r.lim.TakeReceipt(key, n)
		if rc.N > 0 {
			r.receipts = append(r.receipts, held{key, rc})
		}
		return assert.Equal(t, want, d, "%s: TakeReceipt(%q, %d) at %d", msg, key, n, now-r.epoch)
	}
	return r.call(t, msg)
}
