package fixedwindow_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
)

// modelRun plays random calls (takes, allows, reports, refunds, sweeps) on
// two keys, on a limiter whose clock reading may stall a call while other
// calls land and the clock moves forward. Every call but a report reads the
// clock before the key's word, so it takes effect after the calls inside its
// stall, at its reading (or at its last, when it read the clock again); a
// report reads the clock between two loads of the word, so it takes effect
// after them too, at its reading, or, when one of them wrote the key, at the
// reading it started over with (a key fresh before them it may answer as
// fresh, which is the same at any time): each must answer as the sequential
// model does in that order. A denial whose first
// reading is behind the key's window must have read the clock again: the
// model, told that reading, would deny it too.
type modelRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    limitertest.HookClock
	lim      *fixedwindow.Limiter
	model    *models.FixedWindow
	limit    int
	window   int64
	reads    int
	receipts []keyReceipt
	keys     []string
	stalled  int
	reRead   int
}

// keyReceipt is a receipt and the key it was taken from.
type keyReceipt struct {
	key string
	rc  hotlimit.Receipt
}

// read is the limiter's clock: the hook clock, counting its readings.
func (r *modelRun) read() int64 { r.reads++; return r.clock.Read() }

// tick moves the clock forward: not at all, a little, or across a window.
func (r *modelRun) tick() {
	switch r.rng.IntN(4) {
	case 0:
	case 1:
		r.clock.Now.Add(1 + r.rng.Int64N(r.window/4))
	default:
		r.clock.Now.Add(r.rng.Int64N(r.window + r.window/2))
	}
}

// call makes one random call, checked against the model; with stall, the
// call's first clock reading runs a few more calls before it returns, with
// the clock moving on.
func (r *modelRun) call(stall bool, msg string) {
	key := r.keys[r.rng.IntN(len(r.keys))]
	var t0 int64
	nested := 0
	var atReading func() // runs in the hook, before the calls inside the stall
	r.clock.Hook = func() {
		t0 = r.clock.Now.Load()
		if atReading != nil {
			atReading()
		}
		before := r.reads
		defer func() { nested = r.reads - before }()
		if stall {
			for i := range 1 + r.rng.IntN(3) {
				r.tick()
				r.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
			}
		}
	}
	defer func() { r.clock.Hook = nil }()
	if stall {
		r.stalled++
	}
	reads := r.reads
	// decided returns the reading the call decided on: t0, or the clock now
	// when it read the clock again.
	decided := func() int64 {
		if r.reads-reads-nested > 1 {
			r.reRead++
			return r.clock.Now.Load()
		}
		return t0
	}
	switch p := r.rng.IntN(20); {
	case p < 2:
		r.lim.Sweep()
		r.model.Sweep(t0)
	case p < 4:
		n := []int{0, -1, r.limit + 1}[r.rng.IntN(3)]
		var want hotlimit.Decision
		atReading = func() { want = r.model.Take(key, n, t0) }
		d := r.lim.Take(key, n)
		switch r.reads - reads - nested {
		case 1:
			// The calls inside the stall left the word as the report
			// loaded it: it answers the key after them, at its
			// reading. Only a key fresh before them (not held, or its
			// cell dead), which is the same at any time, may be
			// answered as before them.
			if want != models.NewFixedWindow(r.limit, time.Duration(r.window)).Take(key, n, t0) {
				want = r.model.Take(key, n, t0)
			}
			assert.Equal(r.t, want, d, "%s: report Take(%q, %d) at %d", msg, key, n, t0)
		case 2:
			// A call inside the stall wrote the key between the
			// report's loads: it started over, after them.
			r.reRead++
			now := r.clock.Now.Load()
			assert.Equal(r.t, r.model.Take(key, n, now), d, "%s: report Take(%q, %d) read again at %d, after the calls inside its stall", msg, key, n, now)
		default:
			r.t.Fatalf("%s: a report read the clock %d times", msg, r.reads-reads-nested)
		}
	case p < 7:
		if len(r.receipts) == 0 {
			return
		}
		k := r.rng.IntN(len(r.receipts))
		kr := r.receipts[k]
		r.receipts = append(r.receipts[:k], r.receipts[k+1:]...)
		r.lim.Refund(kr.key, kr.rc)
		if r.reads != reads { // the key was held: the refund read the clock
			r.model.Refund(kr.key, kr.rc, t0)
		}
	default:
		n := 1
		if r.rng.IntN(2) == 0 {
			n = 1 + r.rng.IntN(r.limit)
		}
		allow := n == 1 && r.rng.IntN(2) == 0
		var d hotlimit.Decision
		var rc hotlimit.Receipt
		if allow {
			d.Allowed = r.lim.Allow(key)
		} else {
			d, rc = r.lim.TakeReceipt(key, n)
		}
		// A denial on a reading behind the key's stored window reads the
		// clock again: the model, told the first reading, would count it
		// against the stored window and deny it too.
		end := (models.FloorDiv(t0, r.window)+1)*r.window - t0 // t0's window ends
		if behind := r.model.Take(key, 0, t0).ResetAfter > time.Duration(end); behind && !d.Allowed && r.reads-reads-nested == 1 {
			r.t.Errorf("%s: Take(%q, %d) denied on its first reading (%d), behind the key's window", msg, key, n, t0)
		}
		now := decided()
		want := r.model.Take(key, n, now)
		if allow {
			want = hotlimit.Decision{Allowed: want.Allowed}
		}
		assert.Equal(r.t, want, d, "%s: Take(%q, %d) at reading %d (first %d)", msg, key, n, now, t0)
		if rc.N > 0 {
			r.receipts = append(r.receipts, keyReceipt{key, rc})
		}
	}
}

// TestStalledCallersAnswerAsTheModel: random calls on two keys, some stalled
// in their clock reading while other calls land and the clock moves forward,
// answer as the sequential model does in the order the calls took effect, at
// the reading each decided on.
func TestStalledCallersAnswerAsTheModel(t *testing.T) {
	seqs := 600
	if testing.Short() {
		seqs = 120
	}
	total, stalled, reRead := 0, 0, 0
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 23))
		r := &modelRun{t: t, rng: rng, limit: 1 + rng.IntN(4), window: int64(time.Second), keys: []string{"a", "b"}}
		r.clock.Now.Store(rng.Int64N(1<<40) - 1<<39)
		var err error
		r.lim, err = fixedwindow.New(r.limit, time.Duration(r.window), hotlimit.WithClock(r.read))
		require.NoError(t, err)
		r.model = models.NewFixedWindow(r.limit, time.Duration(r.window))
		for i := range 40 {
			r.tick()
			r.call(rng.IntN(3) == 0, fmt.Sprintf("seq %d (limit %d) call %d", seq, r.limit, i))
			total++
			if t.Failed() {
				return
			}
		}
		stalled += r.stalled
		reRead += r.reRead
	}
	assert.Positive(t, stalled)
	assert.Positive(t, reRead)
	t.Logf("%d calls, %d stalled, %d decided on a second reading", total, stalled, reRead)
}
