package tokenbucket

import (
	"math/big"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/models"
	"github.com/hotlimit/hotlimit/internal/packed"
)

// guardHolds reports whether invariant G of guard.go holds for key's word:
// with swept = L, a live word that is not full has a timestamp τ with
// L − back ≤ τ < L + hard. The word keeps u(τ) mod 2^T, and the span is
// below 2^(T−1) units, so the check is exact.
func guardHolds(t *testing.T, l *Limiter, key string) bool {
	t.Helper()
	c, ok := l.cells.Peek(key)
	if !ok {
		return true
	}
	w := c.word.Load()
	if w == packed.BucketDead {
		return true
	}
	tokens, stamp := l.b.Unpack(w)
	if tokens >= l.b.Cap {
		return true
	}
	gen := l.swept.Load()
	uLo, _ := l.b.Units(uint64(max(gen-l.back, 0)))
	uHi, _ := l.b.Units(uint64(gen + l.hard - 1))
	mask := uint64(1)<<l.b.TickBits - 1
	return (stamp-uLo)&mask <= uHi-uLo
}

// stalledTake is a Take(key, n) descheduled between a Load of the word
// and its CompareAndSwap. decide runs one iteration of take's CAS loop
// (limiter.go) up to the CAS, line for line, with take's handling of a
// tombstone (revive the cell, read the clock again) and of a new generation
// (read the clock again); cas makes the CAS it decided on. A test lands other
// calls between the two.
type stalledTake struct {
	l       *Limiter
	key     string
	n       int
	c       *cell
	t       uint64
	gen     int64
	w, next uint64
}

func (x *stalledTake) decide(t *testing.T) {
	t.Helper()
	l := x.l
	need := uint64(x.n) << l.b.FracBits
	for {
		w := x.c.word.Load()
		tokens, last := l.b.Unpack(w)
		var floor int64
		if tokens >= l.b.Cap {
			floor = l.floor.Load()
		}
		if w == packed.BucketDead || l.swept.Load() != x.gen {
			if w == packed.BucketDead {
				x.c = l.cells.Revive(x.key, x.c)
			}
			x.t, x.gen, _ = l.read()
			continue
		}
		tt := x.t
		if int64(tt) < floor {
			tt = uint64(floor)
		}
		now, _ := l.b.Units(tt)
		tokens, last = l.b.Refill(tokens, last, now)
		require.GreaterOrEqual(t, tokens, need, "the stalled Take is admitted")
		x.w, x.next = w, l.b.Pack(tokens-need, last)
		return
	}
}

func (x *stalledTake) cas() bool { return x.c.word.CompareAndSwap(x.w, x.next) }

// TestFullWordABAKeepsGuard forces the ABA race that broke the wrap guard
// while a Refund could fill a word. The floor argument in guard.go says that
// an admission from a full word Loads that word after the sweep's visit
// whenever its CAS can land after the visit. A full word's value could
// recur, though: a Take and a Refund at the same clock reading (one tick of
// a coarse clock) turned Pack(Cap, u(s)) into Pack(Cap − 1, u(s)) and back
// into Pack(Cap, u(s)). So:
//
//  1. caller X reads the clock at t0 under generation g and stalls;
//  2. at s (t0 < s − Range/4, s − g < hard) a Take and a Refund leave the
//     full word w0 = Pack(Cap, u(s));
//  3. X Loads w0, loads floor (not raised yet), checks swept = g, decides
//     to write Pack(Cap − n, u(t0)), and is descheduled before its CAS;
//  4. a Take at s makes the word not full;
//  5. a sweep at s raises floor to s − Range/4, judges the word not full
//     at s (it was written at s), keeps it, and records generation s;
//  6. the Refund of step 4 makes the word w0 again;
//  7. X's CAS(w0, Pack(Cap − n, u(t0))) succeeds: a word that is not full,
//     stamped t0 < s − Range/4, lives under generation s. G is broken.
//
// A reader Range or more after t0 (and less than hard after s, so under
// generation s) reads that timestamp as a clock that stepped back and
// refills nothing: a key idle for far longer than its fill time stays empty
// until t0 + 2·Range. Sweeps did not cure it: they read the word the same
// way. Now a Refund that would fill a word kills it instead (a full bucket
// equals no bucket), so the only full word is a new cell's first one, which
// never comes back once changed: in step 2 the word is dead, and X revives
// a new cell.
func TestFullWordABAKeepsGuard(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  int
		window time.Duration
		burst  int
	}{
		{"1per24h_burst2", 1, 24 * time.Hour, 2},
		{"1Mi_per_ms", 1 << 20, time.Millisecond, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now atomic.Int64
			lim, err := New(tc.limit, tc.window, hotlimit.WithBurst(tc.burst), hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			lim.sweeping.Store(true) // the test runs every sweep itself
			rng, fill := int64(lim.b.Range()), lim.fill
			burst := lim.burst

			// 1. X: Get, then its clock reading t0 under generation 0.
			t0 := rng / 16
			now.Store(t0)
			x := &stalledTake{l: lim, key: "k", n: burst, c: lim.cells.Get("k")}
			x.t, x.gen, _ = lim.read()
			require.Equal(t, uint64(t0), x.t)
			require.Zero(t, x.gen)

			s := x.gen + lim.hard - 1
			reader := t0 + rng + fill
			require.Greater(t, s-t0, lim.back, "t0 is more than Range/4 before s")
			require.Less(t, s-x.gen-fill, lim.hard, "the sweep at s judges words")
			require.Less(t, reader-s, lim.hard, "the reader reads under generation s")
			require.GreaterOrEqual(t, reader-s, fill, "the key is idle for a fill time at the reader")

			// 2. A Take and its Refund at s: the full word w0 = Pack(Cap, u(s)).
			now.Store(s)
			d, r1 := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)
			lim.Refund("k", r1)

			// 3. X Loads w0 and decides; its CAS waits.
			x.decide(t)

			// 4. Another Take at s.
			d, r2 := lim.TakeReceipt("k", 1)
			require.True(t, d.Allowed)

			// 5. The sweep at s keeps the word (not full at s) and records s.
			assert.Zero(t, lim.Sweep())
			require.Equal(t, s, lim.swept.Load())
			require.True(t, guardHolds(t, lim, "k"), "G holds right after the sweep")

			// 6. The Refund of step 4 brings w0 back: the full word recurs.
			lim.Refund("k", r2)

			// 7. X's CAS lands; when it fails, X goes on as take's loop does.
			for !x.cas() {
				x.decide(t)
			}

			assert.True(t, guardHolds(t, lim, "k"),
				"a word stamped t0 = %v lives under generation s = %v (bound s − Range/4 = %v)",
				time.Duration(t0), time.Duration(s), time.Duration(s-lim.back))

			// The key has been idle for a fill time or more: it is full.
			now.Store(reader)
			lim.Sweep()
			d = lim.Take("k", 0)
			assert.Equal(t, burst, d.Remaining, "idle since s, a fill time ago")
			assert.Zero(t, d.ResetAfter, "idle since s, a fill time ago")
			d = lim.Take("k", 1)
			assert.True(t, d.Allowed, "idle since s, a fill time ago; RetryAfter %v", d.RetryAfter)
		})
	}
}

// stampOf returns the timestamp field of key's word and whether the word is
// live and not full.
func stampOf(l *Limiter, key string) (stamp uint64, partial bool) {
	c, ok := l.cells.Peek(key)
	if !ok {
		return 0, false
	}
	w := c.word.Load()
	tokens, stamp := l.b.Unpack(w)
	return stamp, w != packed.BucketDead && tokens < l.b.Cap
}

// TestConcurrentSweepsKeepTheGuard starts sweep B (from a reading after
// sA, before sA, or a whole guard span past g, when it kills every word
// unread) while sweep A, started at sA under generation g, holds its first
// word. B runs on its own goroutine beside A (internal/keyed's Sweep takes
// no lock): if it reads g, whichever of A and B completes first records its
// reading, and the other notices the new generation at its next kill, or
// fails its CompareAndSwap from g, and records nothing; if it reads sA, it
// sweeps under sA and records sB only if sB is later. Either way G holds
// for every word, the generation is A's or B's (never moved back), the idle
// key is evicted, the floor A raised stays below the generation plus hard,
// and an admission from a full word by a caller whose reading predates the
// floor writes the floor, inside G.
func TestConcurrentSweepsKeepTheGuard(t *testing.T) {
	for _, tc := range []struct {
		name string
		sB   func(l *Limiter, g, sA int64) int64
	}{
		{"B=later", func(l *Limiter, g, sA int64) int64 { return sA + l.fill/4 }},
		{"B=earlier", func(l *Limiter, g, sA int64) int64 { return g + (sA-g)/2 }},
		{"B=allFull", func(l *Limiter, g, sA int64) int64 { return g + l.hard + l.fill }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := new(stallClock)
			lim, err := New(1, 24*time.Hour, hotlimit.WithBurst(2), hotlimit.WithClock(clk.clock))
			require.NoError(t, err)
			lim.sweeping.Store(true) // the test runs every sweep itself
			fill := lim.fill

			// Generation g, with an idle key (full at both sweeps) and a
			// busy one (drained just before sA).
			g := int64(time.Hour)
			clk.now.Store(g)
			require.True(t, lim.Take("idle", 2).Allowed)
			sA := g + lim.hard - fill/2
			clk.now.Store(sA - fill/8)
			require.True(t, lim.Take("busy", 2).Allowed)
			sB := tc.sB(lim, g, sA)
			allFullB := sB-g-fill >= lim.hard

			clk.now.Store(sA)
			var started atomic.Bool
			bDone := make(chan struct{})
			lim.sweepLoaded = func() {
				if !started.CompareAndSwap(false, true) {
					return
				}
				go func() { // B: waits for A's pass to end
					defer close(bDone)
					lim.sweep(uint64(sB))
				}()
			}
			lim.Sweep()
			<-bDone
			require.True(t, started.Load(), "B started inside A")
			lim.sweepLoaded = nil
			_ = allFullB

			gen := lim.swept.Load()
			assert.True(t, gen == sA || gen == sB, "the generation is A's or B's: %d (sA %d, sB %d)", gen, sA, sB)
			for _, k := range []string{"idle", "busy"} {
				assert.True(t, guardHolds(t, lim, k), "G for %q", k)
			}
			_, ok := lim.cells.Peek("idle")
			assert.False(t, ok, "the idle key is evicted")
			floor := lim.floor.Load()
			assert.Less(t, floor, gen+lim.hard, "the floor stays inside G's upper bound")
			assert.GreaterOrEqual(t, floor, sA-lim.back, "A raised the floor before its visit")
			sB = gen // the admission below is judged under the generation in force

			// A caller whose reading is at the generation's lower bound
			// admits from a fresh word: it writes the floor or later.
			at := max(sB-lim.back, 0)
			clk.arm(at)
			clk.release = make(chan struct{})
			close(clk.release)
			require.True(t, lim.Allow("fresh"))
			assert.True(t, guardHolds(t, lim, "fresh"), "G for a word written at the floor")
			stamp, partial := stampOf(lim, "fresh")
			require.True(t, partial)
			want, _ := lim.b.Units(uint64(max(at, floor)))
			assert.Equal(t, want&(1<<lim.b.TickBits-1), stamp, "the admission is stamped max(reading, floor)")
		})
	}
}

// TestStalledCallerRevivesKilledCell: a caller Gets the key's cell and
// reads the clock at t0, then stalls; a sweep at s finds the bucket full,
// kills the cell, deletes it, and records s. The caller, resumed, must not
// write t0 anywhere: it finds the tombstone, revives a fresh cell, reads the
// clock again and is admitted at s. Its reading t0 is either within Range/4
// of s (read as is) or older (raised by the guard to s − Range/4); in both
// cases the new word is stamped s, G holds, and the key's state is the exact
// model's after one admission at s.
func TestStalledCallerRevivesKilledCell(t *testing.T) {
	for _, far := range []bool{false, true} {
		name := map[bool]string{false: "t0=near", true: "t0=far"}[far]
		t.Run(name, func(t *testing.T) {
			clk := new(stallClock)
			lim, err := New(5, time.Second, hotlimit.WithClock(clk.clock))
			require.NoError(t, err)
			lim.sweeping.Store(true)
			t1 := int64(time.Hour)
			clk.now.Store(t1)
			require.True(t, lim.Take("k", 5).Allowed)
			old, ok := lim.cells.Peek("k")
			require.True(t, ok)

			s := t1 + lim.soft
			t0 := t1 + lim.fill/2 // the bucket is not full yet at t0
			if far {
				s = t1 + lim.back + lim.fill
				t0 = t1
			}
			require.Less(t, s-0, lim.hard)
			require.Equal(t, far, s-t0 > lim.back)

			clk.arm(t0)
			result := make(chan bool, 1)
			go func() { result <- lim.Allow("k") }()
			<-clk.read
			clk.now.Store(s)
			require.Equal(t, 1, lim.Sweep(), "the sweep at s evicts the full key")
			require.Equal(t, s, lim.swept.Load())
			require.Equal(t, packed.BucketDead, old.word.Load())
			close(clk.release)
			require.True(t, <-result, "the stalled caller is admitted")

			c, ok := lim.cells.Peek("k")
			require.True(t, ok)
			require.NotSame(t, old, c, "a fresh cell")
			sU, _ := lim.b.Units(uint64(s))
			tokens, stamp := lim.b.Unpack(c.word.Load())
			assert.Equal(t, lim.b.Cap-lim.unit, tokens)
			assert.Equal(t, sU&(1<<lim.b.TickBits-1), stamp, "stamped at s, not at t0")
			assert.True(t, guardHolds(t, lim, "k"))
			assert.Equal(t, packed.BucketDead, old.word.Load(), "a dead cell never comes back")

			// The exact model: the key evicted full, then one admission at s.
			m := models.NewTokenBucket(5, 5, time.Second, lim.epoch)
			m.Admit("k", s, 1)
			for _, dt := range []int64{0, int64(100 * time.Millisecond), int64(time.Second)} {
				clk.now.Store(s + dt)
				assert.Equal(t, m.Take("k", 0, s+dt), lim.Take("k", 0), "at s+%v", time.Duration(dt))
			}
		})
	}
}

// TestClockStepBackAfterSweep: after a sweep at s, the clock reads up to
// Range/4 earlier (the guard's contract) or more (outside it: the guard
// raises the reading to s − Range/4). Either way every word stays inside G,
// the key admits no more than the exact model over the run, and a denial's
// RetryAfter is positive and exact: RetryAfter − 1 ns later the same Take is
// still denied, RetryAfter later it passes.
func TestClockStepBackAfterSweep(t *testing.T) {
	for _, back := range []string{"within", "beyond"} {
		t.Run("back="+back, func(t *testing.T) {
			var now atomic.Int64
			lim, err := New(5, time.Second, hotlimit.WithClock(now.Load))
			require.NoError(t, err)
			lim.sweeping.Store(true)
			s := lim.back + int64(time.Hour)
			now.Store(s)
			require.True(t, lim.Allow("k"))
			lim.Sweep()
			require.Equal(t, s, lim.swept.Load())

			step := s - lim.back // exactly Range/4 back, a whole number of ns
			if back == "beyond" {
				step = s - lim.back - int64(time.Minute)
			}
			// The limiter's time of a reading: raised to s − back beyond it.
			eff := max(step, s-lim.back)
			m := models.NewTokenBucket(5, 5, time.Second, lim.epoch)
			m.Admit("k", s, 1)

			now.Store(step)
			admitted := 0
			var denial hotlimit.Decision
			for range 10 {
				d := lim.Take("k", 1)
				if !d.Allowed {
					denial = d
					break
				}
				admitted++
				assert.True(t, guardHolds(t, lim, "k"))
			}
			// The model at the (raised) time: a clock behind last refills nothing.
			want := 0
			for m.Take("k", 1, eff).Allowed {
				want++
			}
			assert.Equal(t, want, admitted, "admissions after the step back equal the exact model's")
			require.False(t, denial.Allowed)
			require.Positive(t, denial.RetryAfter, "a denial never says 0")
			require.Less(t, denial.RetryAfter, hotlimit.Never)

			// RetryAfter is exact, measured from the limiter's time.
			now.Store(eff + int64(denial.RetryAfter) - 1)
			assert.False(t, lim.Take("k", 1).Allowed, "RetryAfter − 1 ns later still denied")
			now.Store(eff + int64(denial.RetryAfter))
			assert.True(t, lim.Take("k", 1).Allowed, "RetryAfter later it passes")
			assert.True(t, guardHolds(t, lim, "k"))
		})
	}
}

// TestReportRacingSweepReadsUnderNewGeneration: a report, Take(k, 0) or
// Take(k, n > burst), loads the key's word under the wrap guard's
// generation, then reads the clock at t0 and stalls; meanwhile the key is
// drained at s' and a sweep at s records generation s, more than Range/4
// past t0. The word the report loaded was never checked against s, so it
// must load the word again under s and read the clock again: it answers as
// the model after the drain at s. Then, with the clock stepped back to t0,
// more than Range/4 behind s, a report is raised to s − Range/4 and reads
// the word (stamped s') as a clock behind it: its tokens unchanged,
// ResetAfter the wait to s' plus the refill, never a wrapped distance. No
// report inserts the key or changes its word.
func TestReportRacingSweepReadsUnderNewGeneration(t *testing.T) {
	for _, n := range []int{0, 6} {
		clk := new(stallClock)
		lim, err := New(5, time.Second, hotlimit.WithClock(clk.clock))
		require.NoError(t, err)
		lim.sweeping.Store(true)
		t0 := int64(time.Hour)
		s := t0 + lim.back + int64(time.Hour)
		sd := s - int64(100*time.Millisecond) // the drain, under the old generation
		require.Less(t, s, lim.hard)
		m := models.NewTokenBucket(5, 5, time.Second, lim.epoch)
		clk.now.Store(t0 - int64(200*time.Millisecond))
		require.True(t, lim.Take("k", 1).Allowed, "the key is held before the report")
		m.Admit("k", t0-int64(200*time.Millisecond), 1)

		clk.arm(t0)
		result := make(chan hotlimit.Decision, 1)
		go func() { result <- lim.Take("k", n) }()
		<-clk.read
		clk.now.Store(sd)
		require.True(t, lim.Take("k", 3).Allowed)
		m.Admit("k", sd, 3)
		clk.now.Store(s)
		require.Zero(t, lim.Sweep(), "the drained key is not full at s")
		require.Equal(t, s, lim.swept.Load())
		c, _ := lim.cells.Peek("k")
		w := c.word.Load()
		close(clk.release)
		d := <-result
		assert.Equal(t, m.Take("k", n, s), d, "n=%d: the word after the drain, at the reading taken again", n)
		assert.Equal(t, w, c.word.Load(), "n=%d: a report changes nothing", n)

		clk.now.Store(t0) // a clock stepped back, more than Range/4 behind s
		d = lim.Take("k", n)
		raised := s - lim.back
		assert.Equal(t, 2, d.Remaining, "n=%d: the drained tokens, no refill from a later stamp", n)
		want := time.Duration(sd-raised) + 3*time.Second/5
		assert.Equal(t, want, d.ResetAfter, "n=%d: ResetAfter from the raised reading", n)
		assert.Equal(t, n == 0, d.Allowed, "n=%d", n)
		if n > 0 {
			assert.Equal(t, hotlimit.Never, d.RetryAfter)
		}
		assert.Equal(t, w, c.word.Load(), "n=%d: a report changes nothing", n)
		assert.True(t, guardHolds(t, lim, "k"))
	}
}

// TestUnitsAtCrossings aims Units' rounded-up fraction at its hardest
// inputs: the readings where t·PerWindow/Window crosses a whole number (t =
// ⌈k·Window/part⌉ and its neighbours, part = PerWindow mod Window), where a
// fraction rounded up too coarsely would reach the next whole number a
// reading early, and the ends of the limiter's time, for layouts New accepts
// at the corners of its ranges and at random. Each must equal the 128/64-bit
// division.
func TestUnitsAtCrossings(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	type cfg struct{ limit, burst, window uint64 }
	cfgs := []cfg{
		{5, 5, uint64(time.Second)}, {3, 3, uint64(7 * time.Millisecond)}, {1, 1, uint64(MaxWindow)},
		{MaxLimit, MaxBurst, uint64(MinWindow)}, {MaxLimit - 1, 1, uint64(MaxWindow) - 1},
		{7, 1000, uint64(time.Hour) + 1}, {1<<20 - 3, 3, 999_999_937},
	}
	for range 300 {
		cfgs = append(cfgs, cfg{1 + uint64(r.Int63n(MaxLimit)), 1 + uint64(r.Int63n(MaxBurst)),
			uint64(MinWindow) + uint64(r.Int63n(int64(MaxWindow-MinWindow)+1))})
	}
	checked := 0
	for _, c := range cfgs {
		b, err := layoutFor(c.limit, c.burst, c.window)
		if err != nil {
			continue
		}
		part := b.PerWindow % b.Window
		at := []uint64{0, 1, maxTime, maxTime - 1, b.Window, b.Window - 1}
		if part != 0 {
			// k·Window/part up to maxTime: the readings where a unit begins.
			kMax := new(big.Int).Quo(new(big.Int).Mul(big.NewInt(maxTime), new(big.Int).SetUint64(part)),
				new(big.Int).SetUint64(b.Window))
			for i := range 64 {
				k := new(big.Int).Rand(r, kMax)
				if i < 4 {
					k = new(big.Int).Sub(kMax, big.NewInt(int64(i)))
				}
				x := new(big.Int).Mul(k, new(big.Int).SetUint64(b.Window))
				x.Add(x, new(big.Int).SetUint64(part-1))
				x.Quo(x, new(big.Int).SetUint64(part)) // ⌈k·W/part⌉
				if !x.IsUint64() {
					continue
				}
				for _, d := range []int64{-1, 0, 1} {
					if v := int64(x.Uint64()) + d; v >= 0 && v <= maxTime {
						at = append(at, uint64(v))
					}
				}
			}
		}
		for _, a := range at {
			u, rem := b.Units(a)
			wu, wrem := unitsByDivision(b.PerWindow, b.Window, a)
			require.Equal(t, [2]uint64{wu, wrem}, [2]uint64{u, rem},
				"%d per %v burst %d F=%d: Units(%d)", c.limit, time.Duration(c.window), c.burst, b.FracBits, a)
			checked++
		}
	}
	assert.Greater(t, checked, 10000)
}
