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
// admission or refund that wrote it: both read it through read) with L − R/4 ≤ τ < L + hard. (Full words carry no
// timestamp: packed.Bucket.Refill ignores it.)
//
//   - Readers. read returns a time t and the generation g it checked t against,
//     with g − R/4 ≤ t < g + hard: a t at or past g + hard waits for no one
//     but sweeps on its own goroutine until a newer generation covers it, and
//     a t more than R/4 behind g (a caller that stalled since its clock
//     reading) is raised to g − R/4, a time that has already passed. Allow
//     and Take call read before the Load, and read a word only if swept
//     still equals g after it. report loads the word before it reads the
//     clock (limiter.go says why), so it loads swept before the Load, and
//     reads the word only if that equals the g that read loads after the
//     clock reading. Either way swept equals g before and after the Load,
//     and so at the Load, as generations only grow: G held for the word,
//     and |t − τ| < hard + R/4 = R − fill − m. When it has changed, they read
//     the clock again (report starts over from the map lookup, loading swept
//     and the word again first).
//   - Upper bound. A writer writes its own t, or keeps a later stored τ; its
//     t < g + hard ≤ L + hard, since generations only grow.
//   - Lower bound. A sweep starts at s under generation g (s ≥ g − R/4: sweep
//     raises an older s), and reads words only while swept = g, so by G each has
//     g − R/4 ≤ τ < g + hard. If s ≥ g + hard + fill, every τ is at least
//     fill behind s: every live word is full at s and is killed, unread.
//     Otherwise s − τ < hard + fill + R/4 = R − m and τ − s < hard + R/4, so
//     Refill reads it exactly, and kill leaves only words that are not full at
//     s: their τ > s − fill. A kill is a CAS on the word it judged, and it
//     fails when a write landed after the sweep's Load. That write may be a
//     caller's that read the clock at some t0 long before s and stalled: an
//     admission from a full word writes t0 itself, which may be far below
//     s − R/4 (it was only checked against g). So kill judges the new word
//     again, and again after each lost CAS, until its CAS succeeds or it reads
//     a word that is not full at s (or dead). The sweep's last visit of each
//     cell thus ends in one of three ways. It killed the word: every later
//     CAS on the cell fails. It found the cell dead: a concurrent sweep
//     deletes it, and its callers revive a fresh cell. It left a live word
//     that is not full at s, whose τ > s − fill: a write that lands after the
//     visit refills that word and keeps its τ or writes its own later reading
//     (Refill keeps the later of the two), so τ > s − fill still, as long as
//     the word stays not full. A Refund never fills it: one that would
//     kills the cell instead (refund.go), so a full word is only ever a new
//     cell's first one and never recurs once changed (were it to recur, a
//     stalled admission that loaded it before the visit could CAS its old
//     reading in after the visit, as TestFullWordABAKeepsGuard forces). A
//     full word the sweep visits is killed. (floor, which a judging sweep
//     raises to s − R/4 before its first visit and an admission from a full
//     word raises an older reading to, guarded the time when a Refund could
//     fill a word; G no longer depends on it. It loads floor before it
//     checks swept = g, so the floor it sees comes from a sweep under a
//     generation g' ≤ g, and is below g' + hard + fill − R/4 ≤ g + hard: the
//     upper bound holds.) The sweep visits the cells listed when its walk
//     starts, and those of the insertions and revivals under way then
//     (keyed.Map.SweepAll): an insertion or a revival publishes its cell
//     in the map before it lists it, and may read the clock in between (to
//     pay an auto-sweep step, or a key cap's walk), while other callers
//     load the cell from the map and write it. The list walk misses such a
//     cell; SweepAll walks again over the cells listed since it started
//     once it has seen no insertion under way, or else passes over the
//     whole map. A cell the sweep did not visit was published in the map
//     after the sweep read s (or is dead); its writers read the clock after
//     they took it from the map, so at s − R/4 or later. So when the sweep
//     ends, every word that is not full has τ ≥ s − R/4, and the sweep
//     records s by CompareAndSwap from g, if s > g (a sweep whose reading
//     is behind g records nothing: see sweepPass). If another sweep recorded first,
//     this one stops where it notices and records nothing: that one's record
//     stands. (Sweep, the method, then runs a new pass under it, and the
//     incremental steps judge their cell again under it, so that keys full
//     at their own time are still evicted.)
//
// Liveness: a sweep is O(keys) and runs on the caller's goroutine only past
// hard, which a live limiter reaches only when its clock jumps (the process
// was suspended, or a test moved its clock): from soft on, the first caller to
// notice starts one in the background, which has hard − soft ≥ R/8 to
// finish. Every caller that retries does so because a sweep completed, and a
// sweep retries a key only because another writer's CAS on it succeeded.
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
// completion under it and t is later than it. It returns how many keys it
// evicted.
func (l *Limiter) sweep(t uint64) int {
	n, _ := l.sweepPass(t)
	return n
}

// sweepPass is sweep, reporting also whether it ran to completion: false when
// another sweep recorded a newer generation during it, whereupon it stopped
// judging (see kill) and left the keys it had not visited yet.
func (l *Limiter) sweepPass(t uint64) (evicted int, complete bool) {
	gen := l.swept.Load()
	s := max(int64(t), gen-l.back)
	// From s − gen − fill = hard on, every τ < gen + hard ≤ s − fill (G) is
	// a fill time or more behind s, so every live word is full at s: a
	// judging pass would kill them all just the same (Refill reads them
	// exactly: s − τ ≤ hard + fill + back ≤ R − m, less than 2^(T−1)
	// units). So such a pass kills them unread and raises no floor, which
	// would only move a stalled admission's reading up to s − back (its
	// Decision, its receipt's At).
	allFull := s-gen-l.fill >= l.hard
	sU, _ := l.b.Units(uint64(s))
	if !allFull {
		// Raise floor to s − back before any visit. It only grows: the CAS
		// replaces the value just read only by a larger one, and a
		// concurrent raise fails it and is read again.
		for f := l.floor.Load(); f < s-l.back && !l.floor.CompareAndSwap(f, s-l.back); f = l.floor.Load() {
		}
	}
	stale := false
	judge := func(c *cell) bool {
		if stale {
			return false
		}
		killed, ok := l.kill(c, gen, sU, allFull)
		stale = !ok // a newer sweep completed: its generation stands
		return killed
	}
	// A list walk alone would miss a cell published in the map before s and
	// listed after the walk began: its insertion, stalled in between, let
	// other callers write it, perhaps long before s. Recorded unvisited, its
	// word would break G (see the top of this file). SweepAll reaches the
	// cells of the insertions under way as it starts too.
	n := l.cells.SweepAll(judge)
	// Only a later time becomes the generation: generations only grow. s is
	// behind gen when t was read before the sweep that recorded gen
	// completed (this sweep was overtaken while it stalled) or the clock
	// stepped back. Recorded, it would move swept back: a word written under
	// gen at up to gen + hard would lie past s + hard, outside G, and a
	// caller at s + hard + fill would sweep under s and kill it unread, full
	// or not. (s = gen would record the value swept holds: no change.)
	if !stale && s > gen {
		l.swept.CompareAndSwap(gen, s)
	}
	return n, !stale
}
