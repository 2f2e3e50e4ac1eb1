package tokenbucket

// The wrap guard.
//
// A word stores u(last) modulo 2^T, so a reader at now can tell a forward
// distance from a backward one only when |now − last| is below Range, R (see
// packed.Bucket.Range). Write m for one unit of time rounded up to the
// nanosecond, ⌈window/(limit·2^F)⌉; any two times less than R − m apart read
// unambiguously. Write fill for the time an empty bucket takes to fill,
// ⌈window·burst/limit⌉ (a window when burst = limit): a key idle for fill is
// full. layoutFor guarantees R ≥ 4·fill and R ≥ 1 hour.
//
// The guard makes every read of a word see a distance below R − m, whatever
// the clock does, as long as it never reads more than R/4 earlier than a
// reading already made (a production clock never goes back at all; R/4 is at
// least 15 minutes). Its state is swept, the generation: the time at which the
// last sweep that ran to completion started; and two spans from it,
//
//	soft = min(R/4, hard/2)    a caller starts a sweep on its own goroutine
//	hard = 3R/4 − fill − m     a caller sweeps before reading any word
//
// Invariant G: while swept = L, every live word that is not full has a
// timestamp τ (the clock reading, in nanoseconds since the epoch, of the
// admission that wrote it) with L − R/4 < τ < L + hard. (Full words carry no
// timestamp: packed.Bucket.Refill ignores it.)
//
//   - Readers. read returns a time t and the generation g it checked t against,
//     with g − R/4 ≤ t < g + hard: a t at or past g + hard waits for no one
//     but sweeps on its own goroutine until a newer generation covers it, and
//     a t more than R/4 behind g (a caller that stalled since its clock
//     reading) is raised to g − R/4, a time that has already passed. Allow,
//     Take and report read a word only if swept still equals g after the Load,
//     so G held for the word: |t − τ| < hard + R/4 = R − fill − m. When it
//     has changed, they read the clock again.
//   - Upper bound. A writer writes its own t, or keeps a later stored τ; its
//     t < g + hard ≤ L + hard, since generations only grow.
//   - Lower bound. A sweep starts at s under generation g (s ≥ g − R/4: sweep
//     raises an older s), and reads words only while swept = g, so by G each has
//     g − R/4 < τ < g + hard. If s ≥ g + hard + fill, every τ is at least
//     fill behind s: every live word is full at s and is killed, unread.
//     Otherwise s − τ < hard + fill + R/4 = R − m and τ − s < hard + R/4, so
//     Refill reads it exactly, and kill leaves only words that are not full at
//     s: their τ > s − fill. A write that lands after the sweep's visit
//     either replaced the visited word, and keeps its τ or a later one, or
//     went to a cell the sweep never saw: inserted, or revived, after the
//     sweep started, whose writers read the clock after Get or Revive
//     returned it, so at s − R/4 or later. (A writer that read the clock
//     before the visit and wrote after it expected the visited word: if the
//     sweep killed it, that CAS failed.) So when the sweep ends, every
//     word that is not full has τ > s − R/4, and the sweep records s by
//     CompareAndSwap from g. If another sweep recorded first, this one stops
//     where it notices and records nothing: that one's record stands.
//
// Liveness: a sweep is O(keys) and runs on the caller's goroutine only past
// hard, which a live limiter reaches only when its clock jumps (the process
// was suspended, or a test moved its clock): from soft on, the first caller to
// notice starts one in the background, which has hard − soft ≥ R/8 to
// finish. Every caller that retries does so because a sweep completed.
//
// The cost on the hot path is one atomic load of swept before the CAS loop,
// and one after each Load of the word.

// guardSpans returns the guard's spans, in nanoseconds, for a layout whose
// timestamps span rng nanoseconds, whose empty bucket fills in fill
// nanoseconds, and which refills perWindow units per window: soft, hard and back = R/4, how far a reading may lag its
// generation.
func guardSpans(rng, fill, window, perWindow uint64) (soft, hard, back int64) {
	unit := (window + perWindow - 1) / perWindow // m: ⌈window/(limit·2^F)⌉
	r := int64(rng)                              // at most 2^63 − 1: see packed.Bucket.Range
	hard = 3*(r/4) - int64(fill) - int64(unit)
	return min(r/4, hard/2), hard, r / 4
}

// guard is the slow path of read, for a reading t that is at least soft past
// its generation gen, or more than back behind it. It returns the time and
// the generation the caller reads words under, g − back ≤ t < g + hard; see
// the comment at the top of this file.
func (l *Limiter) guard(t uint64, gen int64) (uint64, int64) {
	for {
		switch d := int64(t) - gen; {
		case d < -l.back:
			return uint64(gen - l.back), gen
		case d >= l.hard:
			l.sweep(t)
			gen = l.swept.Load()
			continue
		case d >= l.soft && l.sweeping.CompareAndSwap(false, true):
			go l.sweepInBackground()
		}
		return t, gen
	}
}

// sweepInBackground is a sweep started at soft, on its own goroutine.
func (l *Limiter) sweepInBackground() {
	defer l.sweeping.Store(false)
	t, _ := l.time()
	l.sweep(t)
}

// sweep evicts the keys whose bucket is full at t, reading words under the
// generation it finds, and records t as the new generation when it ran to
// completion under it. It returns how many keys it evicted.
func (l *Limiter) sweep(t uint64) int {
	gen := l.swept.Load()
	s := max(int64(t), gen-l.back)
	allFull := s-gen-l.fill >= l.hard
	sU, _ := l.b.Units(uint64(s))
	stale := false
	n := l.cells.Sweep(func(c *cell) bool {
		if stale {
			return false
		}
		w := c.word.Load()
		if l.swept.Load() != gen {
			stale = true // a newer sweep completed: its generation stands
			return false
		}
		return l.kill(c, w, sU, allFull)
	})
	if !stale && s > gen {
		l.swept.CompareAndSwap(gen, s)
	}
	return n
}
