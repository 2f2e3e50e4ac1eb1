package slidingcounter_test

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
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// stallEvent is a take or a refund that took effect, at the time the model
// replays it at.
type stallEvent struct {
	n      int              // a take: of n requests
	r      hotlimit.Receipt // a refund: of this receipt
	at     int64
	refund bool
}

// stallRun is one random sequence of calls on one key, in which a call may
// load its word, read the clock and stall there: other calls (takes,
// refunds, sweeps) land meanwhile, and the clock moves on, forward only,
// before the stalled call goes on to its CAS. Two laws are checked:
//
//   - Each decision is the sequential model's, with the calls in the order
//     they took effect, at a time that passed during the call: the call's
//     reading, or its last one when it read the clock again. A denial on the
//     first reading takes effect before the calls of its stall (it judges
//     the word loaded before them), and so does a report on its first that
//     found the key fresh; anything else after them.
//   - Conservation of the aligned windows: the requests counted in a window
//     (the receipts' windows; an Allow's, which has none, as the model
//     counts it) less those given back never exceed the limit, and a key's
//     window only moves forward: no request counts in a window older than
//     the latest one a request counted in.
//
// The model takes a count of zero for a fresh key whatever its window, and a
// reading older than the key's window for a clock that stepped back, so only
// the second law sees a stale reading count in its own, older window.
type stallRun struct {
	t        *testing.T
	rng      *rand.Rand
	clock    limitertest.HookClock
	reads    int // clock readings so far
	lim      *slidingcounter.Limiter
	limit    int
	window   int64
	history  []stallEvent
	held     map[int64]int // window index → requests counted less refunded
	latest   int64         // the latest window a request counted in
	any      bool          // whether a request counted yet
	receipts []hotlimit.Receipt
	stalled  int // calls stalled while other takes or refunds took effect
	reRead   int // stalled calls that read the clock again
	behind   int // admissions on a reading behind the key's window
}

func (r *stallRun) read() int64 {
	r.reads++
	return r.clock.Read()
}

func (r *stallRun) index(at int64) int64 { return models.FloorDiv(at, r.window) }

// model returns the model after the first k events.
func (r *stallRun) model(k int) *models.SlidingCounter {
	m := models.NewSlidingCounter(r.limit, time.Duration(r.window))
	for _, e := range r.history[:k] {
		if e.refund {
			m.Refund("k", e.r, e.at)
		} else {
			m.Take("k", e.n, e.at)
		}
	}
	return m
}

// count records n requests counted in window i, after the model's check.
func (r *stallRun) count(i int64, n int, msg string) {
	if r.any {
		assert.GreaterOrEqual(r.t, i, r.latest, "%s: counted in window %d, older than the key's window %d", msg, i, r.latest)
	}
	if !r.any || i > r.latest {
		r.any, r.latest = true, i
	}
	r.held[i] += n
	assert.LessOrEqual(r.t, r.held[i], r.limit, "%s: window %d holds more than the limit", msg, i)
}

// refund gives rc back on the limiter and records what it gave: as the
// model, the count of rc's window, when that is the key's window or the one
// before and the clock is less than two windows after it.
func (r *stallRun) refund(rc hotlimit.Receipt) {
	now := r.clock.Now.Load() // not stalled: Refund's reading
	r.lim.Refund("k", rc)
	r.history = append(r.history, stallEvent{r: rc, at: now, refund: true})
	if i := r.index(rc.At); r.index(now)-i < 2 && (i == r.latest || i == r.latest-1) {
		r.held[i] -= min(rc.N, r.held[i])
	}
}

// call makes one random call; stall lets it stall inside its clock reading.
func (r *stallRun) call(stall bool, msg string) {
	switch p := r.rng.IntN(20); {
	case p < 12:
		r.take(stall, msg)
	case p < 18:
		if len(r.receipts) == 0 {
			return
		}
		k := r.rng.IntN(len(r.receipts))
		rc := r.receipts[k]
		r.receipts = append(r.receipts[:k], r.receipts[k+1:]...)
		r.refund(rc)
	default:
		r.lim.Sweep()
	}
}

// take makes one random take (a report for n = 0 or n > limit), stalled
// inside its clock reading if stall, and checks its decision and where it
// counted.
func (r *stallRun) take(stall bool, msg string) {
	n := 1 + r.rng.IntN(r.limit)
	switch r.rng.IntN(8) {
	case 0:
		n = 0
	case 1:
		n = r.limit + 1
	case 2, 3, 4:
		n = 1
	}
	kind := r.rng.IntN(3) // 0: TakeReceipt, 1: Allow, 2: AllowRemaining
	if n != 1 {
		kind = 0
	}
	var t0 int64
	nested, before := 0, len(r.history)
	r.clock.Hook = func() {
		t0 = r.clock.Now.Load()
		reads, events := r.reads, len(r.history)
		if stall {
			for i := range 1 + r.rng.IntN(4) {
				r.tick()
				r.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
			}
		}
		nested = r.reads - reads
		if len(r.history) > events {
			r.stalled++
		}
	}
	reads := r.reads
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
	own := r.reads - reads - nested // this call's own readings

	// The time the call decided at, and the calls it took effect after.
	at, after := t0, len(r.history)
	switch report := n < 1 || n > r.limit; {
	case report && own == 1:
		// A report loads the word, reads the clock, and loads the word
		// again: when both loads agree, the calls of its stall left the
		// word as it loaded it, and it judges that word at its reading,
		// after them. A dead cell or a missing key, met before the
		// stall, reads as fresh, as the model, which holds the key's
		// counts both zero from then on, reads it: the same at any
		// time, it takes effect before the calls of its stall.
		fresh := models.NewSlidingCounter(r.limit, time.Duration(r.window)).Take("k", n, at)
		if r.model(before).Take("k", n, at) == fresh {
			after = before
		}
	case report:
		// A call inside the stall wrote the word between the report's
		// loads: it started over, once, after them, at its last reading.
		require.Equal(r.t, 2, own, "%s: a report reads the clock once, or twice when a write landed inside its reading", msg)
		at = t1
	case own > 1:
		at = t1 // it read the clock again: on the word as the stall left it
		if t1 != t0 {
			r.reRead++
		}
	case !d.Allowed:
		after = before // a denial on the word it loaded before the stall
	}
	want := r.model(after).Take("k", n, at)
	switch kind {
	case 1:
		want = hotlimit.Decision{Allowed: want.Allowed}
	case 2:
		want = hotlimit.Decision{Allowed: want.Allowed, Remaining: want.Remaining}
	}
	if !assert.Equal(r.t, want, d, "%s: n %d, reading %d, decided at %d (stall took %d)", msg, n, t0, at, t1-t0) {
		return
	}
	if !d.Allowed || n < 1 || n > r.limit {
		return
	}
	// The window the requests counted in: at's, or the key's later window
	// when at reads behind it, unless the model holds the key fresh there
	// (both counts zero), whose window then starts at at's.
	i := r.index(at)
	if r.any && i < r.latest && r.model(after).Take("k", 0, r.latest*r.window).Remaining != r.limit {
		i = r.latest
	}
	r.history = append(r.history, stallEvent{n: n, at: at})
	counted := at
	if i > r.index(at) {
		counted = i * r.window // at its window's start
		r.behind++
	}
	if kind == 0 {
		assert.Equal(r.t, hotlimit.Receipt{N: n, At: counted}, rc, "%s: the receipt", msg)
	}
	r.count(i, n, msg)
	r.receipts = append(r.receipts, hotlimit.Receipt{N: n, At: counted})
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

// TestStalledCallersKeepTheLimitPerWindow: random sequences of takes (Take,
// Allow, AllowRemaining), refunds and sweeps on one key, where a take may
// load its word and read the clock, then stall while other calls land and
// the clock moves into later windows, and only then write its word. Every
// decision is the model's at a time that passed during the call, no aligned
// window ever counts more than the limit, and no request counts in a window
// older than the key's latest.
func TestStalledCallersKeepTheLimitPerWindow(t *testing.T) {
	seqs := 3000
	if testing.Short() {
		seqs = 500
	}
	stalled, reRead, behind := 0, 0, 0
	for seq := range seqs {
		rng := rand.New(rand.NewPCG(uint64(seq), 11))
		r := &stallRun{t: t, rng: rng, limit: 1 + rng.IntN(4), window: int64(time.Second), held: map[int64]int{}}
		if rng.IntN(4) == 0 {
			r.window = int64(7 * time.Millisecond)
		}
		r.clock.Now.Store(rng.Int64N(1<<40) - 1<<39)
		var err error
		r.lim, err = slidingcounter.New(r.limit, time.Duration(r.window), hotlimit.WithClock(r.read))
		require.NoError(t, err)
		for i := range 40 {
			r.tick()
			r.call(rng.IntN(3) == 0, fmt.Sprintf("seq %d (limit %d, window %v) call %d", seq, r.limit, time.Duration(r.window), i))
			if t.Failed() {
				return
			}
		}
		stalled, reRead, behind = stalled+r.stalled, reRead+r.reRead, behind+r.behind
	}
	t.Logf("%d sequences: %d calls stalled, %d read the clock again, %d counted behind", seqs, stalled, reRead, behind)
	assert.Greater(t, stalled, seqs, "calls stalled while others took effect")
	assert.Greater(t, reRead, seqs/10, "stalled calls read the clock again")
	assert.Greater(t, behind, seqs/10, "stalled calls counted in the key's later window")
}
