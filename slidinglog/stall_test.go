package slidinglog_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// stallRun is one random sequence of calls on one key, in which a call may
// stall inside its first clock reading while other calls (takes, refunds,
// reports, sweeps) land and the clock moves on, forward only. The model is
// told of each call as it takes effect, so it holds the calls in their
// order of effect; each decision is checked against it, at a time that
// passed during the call:
//
//   - Take, Allow and AllowRemaining read the clock, then the ring: they
//     take effect after the calls of their stall, at their reading, or at
//     the clock after the stall when they read it again: when a Sweep
//     evicted the key meanwhile (they then count on its fresh cell), and,
//     for Take, when its reading is older than the newest request of the
//     ring and the model denies it there (a denial is judged at a reading
//     no earlier than the requests it sees; a claim logs at the newest
//     time, itself a time of the call).
//   - A report (Take with n = 0, n > limit) reads the ring, then the clock:
//     the key as the model has it after the stall, at either time, or a
//     fresh key when a Sweep evicted the one it read.
//   - A Refund reads the ring, then the clock, then marks: after the calls
//     of its stall, at its reading, or at the clock after the stall when a
//     request was logged meanwhile (the ring moved on: it reads again; a
//     mark of another refund moves no request, and does not).
//
// Where a refund that read a later clock than a call left the free entries
// out of claim order, the model counts a prefix of them, and the limiter
// may count more (see models.SlidingLog.RemainingExact): Remaining is not
// compared there.
type stallRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    limitertest.HookClock
	lim      *slidinglog.Limiter
	m        *models.SlidingLog
	limit    int
	window   int64
	receipts []hotlimit.Receipt
	swept    int // keys the limiter's Sweeps evicted so far
	admitted int // admissions so far
	stalled  int // calls that stalled while others took effect
	later    int // stale Take denials, decided at the clock after the stall
}

// tick moves the clock forward: not at all, a little, or across windows.
func (r *stallRun) tick() {
	switch r.rng.IntN(4) {
	case 0:
	case 1:
		r.clock.Now.Add(1 + r.rng.Int64N(r.window/4))
	default:
		r.clock.Now.Add(r.rng.Int64N(2*r.window + r.window/2))
	}
}

// stall arms the clock so that the next reading runs other calls and moves
// the clock before it returns, if stall is set; it returns the reading the
// call gets, once it has read the clock.
func (r *stallRun) stall(stall bool, msg string) *int64 {
	t0 := new(int64)
	r.clock.Hook = func() {
		*t0 = r.clock.Now.Load()
		if !stall {
			return
		}
		for i := range 1 + r.rng.IntN(4) {
			r.tick()
			r.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
		}
		r.stalled++
	}
	return t0
}

// call makes one random call; stall lets it stall inside its clock reading.
func (r *stallRun) call(stall bool, msg string) {
	switch p := r.rng.IntN(20); {
	case p < 12:
		r.take(stall, msg)
	case p < 14:
		r.report(stall, msg)
	case p < 18:
		r.refund(stall, msg)
	default:
		now := r.clock.Now.Load() // not stalled: Sweep's reading
		swept := r.lim.Sweep()
		r.swept += swept
		if _, held := r.m.Newest("k"); held > 0 {
			assert.Equal(r.t, r.m.Sweep(now), swept, "%s: Sweep", msg)
		} // else the limiter may hold a cell in which no request was logged
	}
}

// take makes one random Take(key, n) with 1 ≤ n ≤ limit, Allow or
// AllowRemaining, stalled inside its clock reading if stall, and checks its
// decision.
func (r *stallRun) take(stall bool, msg string) {
	n := 1 + r.rng.IntN(r.limit)
	kind := r.rng.IntN(3) // 0: TakeReceipt, 1: Allow, 2: AllowRemaining
	if r.rng.IntN(2) == 0 {
		n = 1
	}
	if n != 1 {
		kind = 0
	}
	swept, admitted := r.swept, r.admitted
	t0 := r.stall(stall, msg)
	var d hotlimit.Decision
	var rc hotlimit.Receipt
	switch kind {
	case 0:
		d, rc = r.lim.TakeReceipt("k", n)
	case 1:
		d.Allowed = r.lim.Allow("k")
	default:
		d.Allowed, d.Remaining = r.lim.AllowRemaining("k")
	}
	require.Nil(r.t, r.clock.Hook, "%s: the call read the clock", msg)
	t1 := r.clock.Now.Load()

	at := *t0
	if r.swept > swept {
		at = t1 // evicted meanwhile: it read the clock again for the fresh cell
	} else if newest, logged := r.m.Newest("k"); kind == 0 && logged > 0 && newest > r.m.Now(*t0) {
		// A reading older than the ring's newest request: a denial there is
		// decided again on a later reading.
		c := r.m.Clone()
		if d0 := c.Take("k", n, *t0); !d0.Allowed {
			if _, after := c.Newest("k"); after == logged { // denied before any claim
				at = t1
				if r.admitted > admitted || t1 != *t0 {
					r.later++
				}
			}
		}
	}
	want := r.m.Take("k", n, at)
	if !r.m.RemainingExact() {
		want.Remaining = d.Remaining
	}
	switch kind {
	case 1:
		want = hotlimit.Decision{Allowed: want.Allowed}
	case 2:
		want = hotlimit.Decision{Allowed: want.Allowed, Remaining: want.Remaining}
	}
	assert.Equal(r.t, want, d, "%s: n %d, reading %d, decided at %d (the stall took %d)", msg, n, *t0, at, t1-*t0)
	if d.Allowed {
		r.admitted++
	}
	if rc.N > 0 {
		r.receipts = append(r.receipts, rc)
	}
}

// report makes one Take(key, 0) or Take(key, limit+1), stalled inside its
// clock reading if stall, and checks its decision.
func (r *stallRun) report(stall bool, msg string) {
	n := 0
	if r.rng.IntN(2) == 0 {
		n = r.limit + 1
	}
	swept := r.swept
	t0 := r.stall(stall, msg)
	d := r.lim.Take("k", n)
	if r.clock.Hook != nil { // the key was not held: it read no clock
		r.clock.Hook = nil
		*t0 = r.clock.Now.Load()
	}
	t1 := r.clock.Now.Load()
	fresh := hotlimit.Decision{Allowed: n == 0, Limit: r.limit, Remaining: r.limit}
	if n != 0 {
		fresh.RetryAfter = hotlimit.Never
	}
	var wants []hotlimit.Decision
	for _, at := range []int64{*t0, t1} {
		c := r.m.Clone()
		want := c.Take("k", n, at)
		if !c.RemainingExact() { // this report's count, not the last Take's
			want.Remaining = d.Remaining
		}
		wants = append(wants, want)
	}
	if r.swept > swept {
		wants = append(wants, fresh) // it read the cell a Sweep evicted
	}
	assert.Contains(r.t, wants, d, "%s: report n %d, reading %d (the stall took %d)", msg, n, *t0, t1-*t0)
}

// refund gives back one of the receipts, stalled inside its clock reading
// if stall, and tells the model.
func (r *stallRun) refund(stall bool, msg string) {
	if len(r.receipts) == 0 {
		return
	}
	k := r.rng.IntN(len(r.receipts))
	rc := r.receipts[k]
	r.receipts = append(r.receipts[:k], r.receipts[k+1:]...)
	admitted := r.admitted
	t0 := r.stall(stall, msg)
	r.lim.Refund("k", rc)
	if r.clock.Hook != nil { // the key was not held: it read no clock
		r.clock.Hook = nil
		r.m.Refund("k", rc, r.clock.Now.Load())
		return
	}
	at := *t0
	if r.admitted > admitted {
		at = r.clock.Now.Load() // a request was logged: it read the ring and the clock again
	}
	r.m.Refund("k", rc, at)
}

// TestStalledCallersDecideAsTheModel: random sequences of takes (Take,
// Allow, AllowRemaining), reports, refunds and sweeps on one key, where a
// call may stall inside its clock reading while other calls land and the
// clock moves on, give the decisions of the sequential model with the calls
// in the order they took effect, each at a time that passed during it (see
// stallRun).
func TestStalledCallersDecideAsTheModel(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 500
	}
	stalled, later, swept := 0, 0, 0
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 12))
		// Small limits, and 16 and 17, either side of where the head's lag
		// stops growing with the limit (maxLag).
		limit := []int{1, 2, 3, 4, 16, 17}[rng.IntN(6)]
		r := &stallRun{t: t, rng: rng, limit: limit, window: int64(time.Second)}
		if rng.IntN(4) == 0 {
			r.window = int64(7 * time.Millisecond)
		}
		epoch := rng.Int64N(1<<40) - 1<<39
		r.clock.Now.Store(epoch)
		var err error
		r.lim, err = slidinglog.New(r.limit, time.Duration(r.window), hotlimit.WithClock(r.clock.Read))
		require.NoError(t, err)
		r.m = models.NewSlidingLog(r.limit, time.Duration(r.window)).Clamped(epoch)
		for i := range 40 {
			r.tick()
			r.call(rng.IntN(3) == 0, fmt.Sprintf("seq %d (limit %d, window %v) call %d", seq, r.limit, time.Duration(r.window), i))
			if t.Failed() {
				return
			}
		}
		stalled, later, swept = stalled+r.stalled, later+r.later, swept+r.swept
	}
	t.Logf("%d sequences: %d calls stalled, %d stale denials decided later, %d keys swept", seqs, stalled, later, swept)
	assert.Greater(t, stalled, seqs, "calls stalled while others took effect")
	assert.Greater(t, later, seqs/20, "stale Take denials decided at a later reading")
	assert.Greater(t, swept, seqs/10, "keys swept")
}
