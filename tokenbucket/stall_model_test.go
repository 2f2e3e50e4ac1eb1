package tokenbucket

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
	"github.com/hotlimit/hotlimit/internal/packed"
)

// stallModel plays random calls on a limiter in which a call may read the
// clock and stall while other calls (takes, sweeps, refunds) land and the
// clock moves on, then load and write its word. Each call must answer as the
// sequential model does with the calls in the order they took effect, at the
// call's clock reading, or at its last one when it read the clock again
// (after a sweep completed meanwhile): the model's admissions and refunds
// are replayed to test each. A report (n = 0 or n > burst) loads the word
// before and after it reads the clock, and judges it only when both loads
// agree, so it takes effect after the calls inside its stall too (a key
// fresh before them it may answer as fresh, the same at any time).
type stallModel struct {
	t                   *testing.T
	rng                 *rand.Rand
	clock               limitertest.HookClock
	lim                 *Limiter
	limit, burst        int
	window              time.Duration
	epoch               int64
	history             []admission
	keys                []string
	stalled, reReadings int
	reads               int  // clock readings so far
	jumps               bool // the clock may jump past the wrap guard's hard span
	jumped, raised      int
	step                int64       // the clock moves by multiples of step (ns) but for jumps
	refunding           bool        // some calls refund a receipt (never with jumps)
	receipts            []admission // receipts to refund, with their keys
	refunds             int
	calls               int
}

// read is the limiter's clock: the hook clock, counting its readings.
func (s *stallModel) read() int64 {
	s.reads++
	return s.clock.Read()
}

type admission struct {
	key    string
	n      int
	now    int64
	refund *hotlimit.Receipt // a refund of this receipt at now, not an admission
}

// model returns the model after the admissions and refunds so far.
func (s *stallModel) model() *models.TokenBucket { return s.modelOf(s.history) }

// modelOf returns the model after the admissions and refunds in history.
func (s *stallModel) modelOf(history []admission) *models.TokenBucket {
	m := models.NewTokenBucket(s.limit, s.burst, s.window, s.epoch)
	for _, a := range history {
		if a.refund != nil {
			m.Refund(a.key, *a.refund, a.now)
			continue
		}
		t, _ := m.At(a.now)
		m.Admit(a.key, t, int64(a.n))
	}
	return m
}

func (s *stallModel) tick() {
	if s.jumps {
		// The clock's distance past the wrap guard's generation: stay below
		// soft, where a caller would start a sweep in the background, or
		// jump past hard, where the first caller to read the clock sweeps on
		// its own goroutine.
		p := s.clock.Now.Load() - s.epoch - s.lim.swept.Load()
		if s.rng.IntN(20) == 0 || p+int64(4*s.window) >= s.lim.soft/2 {
			d := s.lim.hard + s.rng.Int64N(s.lim.back/2)
			s.clock.Now.Add(d/int64(time.Millisecond)*int64(time.Millisecond) + int64(time.Millisecond))
			s.jumped++
			return
		}
	}
	switch s.rng.IntN(4) {
	case 0:
	case 1:
		s.clock.Now.Add(s.step * (1 + s.rng.Int64N(50)))
	default:
		s.clock.Now.Add(s.step * s.rng.Int64N(max(2*int64(s.window)/s.step, 2)))
	}
}

func (s *stallModel) call(stall bool, msg string) {
	if s.rng.IntN(8) == 0 {
		s.lim.Sweep()
		return
	}
	if s.refunding && len(s.receipts) > 0 && s.rng.IntN(4) == 0 {
		s.refundCall(stall, msg)
		return
	}
	key := s.keys[s.rng.IntN(len(s.keys))]
	n := 1
	if s.rng.IntN(2) == 0 {
		n = s.rng.IntN(s.burst + 2)
	}
	allow := n == 1 && s.rng.IntN(2) == 0
	var t0 int64
	read := false
	nested := 0 // clock readings made by the calls inside the stall
	prior := 0  // the history before the calls inside the stall
	gen := s.lim.swept.Load()
	looked, held := s.lim.cells.Peek(key) // the cell a report loads its word from
	s.clock.Hook = func() {
		t0, read = s.clock.Now.Load(), true
		prior = len(s.history)
		before := s.reads
		defer func() { nested = s.reads - before }()
		if stall {
			for i := range 1 + s.rng.IntN(4) {
				s.tick()
				s.call(false, fmt.Sprintf("%s, inside the stall, call %d", msg, i))
			}
		}
	}
	reads := s.reads
	var d hotlimit.Decision
	var rc hotlimit.Receipt
	if allow {
		d.Allowed = s.lim.Allow(key)
	} else {
		d, rc = s.lim.TakeReceipt(key, n)
	}
	s.clock.Hook = nil
	require.True(s.t, read, "%s: the call read the clock", msg)
	if stall {
		s.stalled++
	}
	// The call decided at its first reading, or, when it read the clock
	// again (a sweep completed, or a write landed between a report's two
	// loads of the word), at its last one: the clock now. A report on its
	// first reading judges the word its loads before and after the reading
	// agree on, so it takes effect after the calls inside its stall; only
	// a key fresh before them (not held, or its cell dead), the same at
	// any time, it may answer as before them.
	report := n < 1 || n > s.burst
	now, history := t0, s.history
	if s.reads-reads-nested > 1 {
		now = s.clock.Now.Load()
		s.reReadings++
	} else if fresh := models.NewTokenBucket(s.limit, s.burst, s.window, s.epoch).Take(key, n, t0); report && s.modelOf(s.history[:prior]).Take(key, n, t0) == fresh {
		history = s.history[:prior]
	}
	want := s.modelOf(history).Take(key, n, now)
	if allow {
		want = hotlimit.Decision{Allowed: want.Allowed}
	}
	if !s.matches(d, want) && s.jumps {
		// A reading more than Range/4 behind a sweep that completed after
		// it (the clock jumped during the stall) is raised to the sweep's
		// time less Range/4 (guard.go), or an admission from a full word
		// to floor: times that passed during the call.
		for _, raised := range []int64{s.epoch + s.lim.swept.Load() - s.lim.back, s.epoch + s.lim.floor.Load()} {
			if raised <= t0 || raised > s.clock.Now.Load() {
				continue
			}
			w := s.model().Take(key, n, raised)
			if allow {
				w = hotlimit.Decision{Allowed: w.Allowed}
			}
			if s.matches(d, w) {
				now, want = raised, w
				s.raised++
				break
			}
		}
	}
	if report && !s.matches(d, want) && s.lim.swept.Load() != gen && held && looked.word.Load() == packed.BucketDead {
		// A report that a sweep completing during its stall sent back to
		// the word loads it from the cell it looked up: it may find that
		// cell killed by the sweep, full, and answer as for a fresh key,
		// which is the key's state at the sweep's time, during the call
		// (later calls inside the stall may have revived the key since).
		// Only then: a sweep that left the key's cell alive sends the
		// report back to the cell's word, which the model answers.
		fresh := models.NewTokenBucket(s.limit, s.burst, s.window, s.epoch).Take(key, n, now)
		if s.matches(d, fresh) {
			want = fresh
		}
	}
	if !s.matches(d, want) {
		s.t.Errorf("%s: key %q, n %d, reading %d, now %d: got %+v, model %+v", msg, key, n, t0-s.epoch, now-s.epoch, d, want)
		return
	}
	if want.Allowed && n > 0 && n <= s.burst {
		s.history = append(s.history, admission{key: key, n: n, now: now})
		if rc.N > 0 {
			s.receipts = append(s.receipts, admission{key: key, refund: &rc})
		}
	}
}

// matches reports whether the limiter's decision d is the model's: the same
// but for the durations, which the limiter counts on its grid of units: never
// later than the model's, and earlier by less than one unit of time (see
// twin).
func (s *stallModel) matches(d, want hotlimit.Decision) bool {
	unitNs := time.Duration((s.lim.b.Window + s.lim.b.PerWindow - 1) / s.lim.b.PerWindow)
	close := func(got, model time.Duration) bool {
		return got <= model && model-got <= unitNs
	}
	return d.Allowed == want.Allowed && d.Limit == want.Limit && d.Remaining == want.Remaining &&
		close(d.RetryAfter, want.RetryAfter) && close(d.ResetAfter, want.ResetAfter)
}

// TestStalledCallersAnswerAsTheModel: random takes, reports and sweeps on
// two keys, some stalled in their clock reading (a take before its word, a
// report after it) while other calls land and the clock moves forward,
// answer as the sequential model does in the order the calls took effect. An
// admission on a stale reading behind a key's latest write refills nothing:
// it takes from the word as written, never a bucket fuller than it was; a
// denial there reads the clock again, and answers as the model at the later
// reading; a report
// judges the word it loaded at a reading taken after it. In every other sequence the clock also jumps past the
// wrap guard's hard span, during stalls too: the guard's sweeps and raised
// readings answer as the model at a time that passed during the call.
func TestStalledCallersAnswerAsTheModel(t *testing.T) {
	seqs := 800
	if testing.Short() {
		seqs = 150
	}
	configs := []struct {
		limit, burst int
		window       time.Duration
	}{{5, 5, time.Second}, {1, 1, time.Second}, {3, 7, 7 * time.Millisecond}, {100, 10, time.Minute}}
	total, stalled, reRead, jumped, raised := 0, 0, 0, 0, 0
	for seq := range seqs {
		cfg := configs[seq%len(configs)]
		rng := rand.New(rand.NewPCG(uint64(seq), 11))
		s := &stallModel{t: t, rng: rng, limit: cfg.limit, burst: cfg.burst, window: cfg.window, keys: []string{"a", "b"}, step: int64(time.Millisecond)}
		s.jumps = seq%2 == 1
		s.run()
		if t.Failed() {
			t.Logf("seq %d", seq)
			return
		}
		total += s.calls
		stalled += s.stalled
		reRead += s.reReadings
		jumped += s.jumped
		raised += s.raised
	}
	assert.Positive(t, stalled)
	assert.Positive(t, reRead)
	assert.Positive(t, jumped)
	t.Logf("%d calls, %d stalled, %d answered on a second reading, %d clock jumps past the guard's hard span, %d readings raised",
		total, stalled, reRead, jumped, raised)
}

// run plays one sequence of up to 40 calls on a new limiter; a sequence
// without jumps ends before the wrap guard would start a sweep in the
// background, behind the model's back.
func (s *stallModel) run() {
	s.epoch = s.rng.Int64N(1<<50) - 1<<49
	s.clock.Now.Store(s.epoch)
	var err error
	s.lim, err = New(s.limit, s.window, hotlimit.WithClock(s.read), hotlimit.WithBurst(s.burst))
	require.NoError(s.t, err)
	require.True(s.t, exactGrid(s.limit, s.window, time.Duration(s.step), s.lim.b.FracBits))
	for i := range 40 {
		s.tick()
		if !s.jumps && s.clock.Now.Load()-s.epoch > s.lim.soft/2 {
			break // no background sweep behind the model's back
		}
		s.call(s.rng.IntN(3) == 0, fmt.Sprintf("%d/%v burst %d, call %d", s.limit, s.window, s.burst, i))
		s.calls++
		if s.t.Failed() {
			return
		}
	}
}

// TestStalledRefundsAnswerAsTheModel: random takes, sweeps and refunds on
// two keys, some stalled between their clock reading and their word while
// other calls land and the clock moves forward, answer as the sequential
// model does in the order the calls took effect. A refund counts the time
// refilled since its receipt up to the later of its reading and the key's
// latest write: a stale reading gives back what a refund at that write's
// time gives, never more. The clock moves on the grid where the units are
// exact (see unitGrid), so that the refunds' arithmetic is the model's.
func TestStalledRefundsAnswerAsTheModel(t *testing.T) {
	seqs := 800
	if testing.Short() {
		seqs = 150
	}
	configs := []struct {
		limit, burst int
		window       time.Duration
	}{{5, 5, time.Second}, {1, 1, time.Second}, {3, 7, 7 * time.Millisecond}, {100, 10, time.Minute}, {5, 2, time.Second}}
	total, stalled, refunds := 0, 0, 0
	for seq := range seqs {
		cfg := configs[seq%len(configs)]
		rng := rand.New(rand.NewPCG(uint64(seq), 12))
		s := &stallModel{t: t, rng: rng, limit: cfg.limit, burst: cfg.burst, window: cfg.window, keys: []string{"a", "b"}, refunding: true}
		s.step = unitGrid(cfg.limit, cfg.burst, cfg.window)
		s.run()
		if t.Failed() {
			t.Logf("seq %d", seq)
			return
		}
		total += s.calls
		stalled += s.stalled
		refunds += s.refunds
	}
	assert.Positive(t, stalled)
	assert.Positive(t, refunds)
	t.Logf("%d calls, %d stalled, %d refunds", total, stalled, refunds)
}

// unitGrid returns the least multiple of a millisecond at which a limiter of
// limit per window with burst counts a whole number of units: clock readings
// on that grid (from the epoch) make every refill, and every refund's
// deduction, exact.
func unitGrid(limit, burst int, window time.Duration) int64 {
	lim, err := New(limit, window, hotlimit.WithBurst(burst))
	if err != nil {
		panic(err)
	}
	w, p := int64(window), int64(lim.b.PerWindow)
	g := w / gcd64(w, p) // u(g) = g·p/w is whole
	ms := int64(time.Millisecond)
	return g / gcd64(g, ms) * ms
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// refundCall refunds a random receipt, perhaps stalled in its clock reading
// while other calls land. A refund reads the clock before the key's word,
// so it takes effect after the calls inside its stall; it counts the time
// refilled since the receipt up to the later of its reading and the key's
// latest write, which is the model's refund at that time.
func (s *stallModel) refundCall(stall bool, msg string) {
	k := s.rng.IntN(len(s.receipts))
	r := s.receipts[k]
	s.receipts = append(s.receipts[:k], s.receipts[k+1:]...)
	var t0 int64
	s.clock.Hook = func() {
		t0 = s.clock.Now.Load()
		if stall {
			for i := range 1 + s.rng.IntN(4) {
				s.tick()
				s.call(false, fmt.Sprintf("%s, inside the refund's stall, call %d", msg, i))
			}
		}
	}
	reads := s.reads
	s.lim.Refund(r.key, *r.refund)
	s.clock.Hook = nil
	if s.reads == reads {
		return // the key is not held: nothing given, no reading
	}
	at := t0
	for _, a := range s.history {
		if a.key == r.key {
			at = max(at, a.now)
		}
	}
	s.history = append(s.history, admission{key: r.key, now: at, refund: r.refund})
	s.refunds++
}
