package slidinglog

import (
	"math"
	"sync/atomic"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// cell is one key's log: a ring of limit slots and a head that counts the
// claims made so far.
//
// Claim k (k = 0, 1, 2, ...) logs the k-th admitted request of the key in
// slot k mod L, in round k / L, as packed.PackStamp(t, round), where t is
// the request's logged time, in nanoseconds since the limiter's epoch (see
// Limiter.clamp). So slot k mod L holds, before
// claim k, the time of claim k − L: the oldest of the last L requests.
//
//	head:  claims completed, or one less while a claim is in flight
//	slot:  | logged time, ns (62 bits) | refunded | parity of the round that wrote it |
//
// Slots are stored XORed with freshStamp, so that the zero value of a slot,
// as make returns it, reads as freshStamp: time packed.MinStamp, parity 1,
// the parity of round −1. A fresh ring therefore reads as L requests logged
// at the dawn of time, all expired, and round 0 finds every slot unclaimed.
// packed.StampDead is the tombstone Sweep swaps into the slot under the head.
//
// # Protocol
//
// A claimer reads head h, then slot i = h mod L (value v), then the newest
// slot (h−1) mod L, then head again, and goes on only if head still equals h:
// head is then h throughout its reads. In round r = h / L:
//
//   - v has r's parity: claim h was made and head is stale; the reader helps
//     with head.CompareAndSwap(h, h+1) and starts again.
//   - otherwise v is claim h − L, the oldest of the last L. Its time is the
//     limit's verdict: not expired (and not refunded), deny; expired or
//     refunded, CAS slot i from v to the new stamp, then
//     head.CompareAndSwap(h, h+1) (which fails harmlessly if a helper already
//     advanced it).
//
// Invariant H: head goes from h to h+1 only after slot h mod L holds a
// stamp of round h / L. A slot CAS succeeds only while head equals the h its
// caller read: the slot still holds v, and no slot ever holds the same value
// twice (below), so no claim of round r landed on it after the caller's read;
// a head advance past h needs such a claim (H). So every successful claim CAS
// is claim h of round h / L, and the slot's previous value was claim h − L
// (or the fresh value).
//
// Safety, the exactness of the limit: a claim replaces a logged time t0 with
// t only if t0 ≤ t − Window or t0's request was refunded, so each slot's
// counted (not refunded) times grow by at least Window from one request to
// the next: a refunded t0 itself replaced a counted time at or before
// t0 − Window, and t ≥ t0. A span of length Window holds at most one counted
// time per slot, hence at most L. That holds whatever the interleaving, with
// stale clock reads, and with a clock that steps back, since the check is
// made on the very value the CAS replaces. Refund marks the oldest counted
// entries in the window, never newer than the requests it gives back: see
// Limiter.Refund for why that creates no capacity that was not taken.
//
// No repeated value: a slot's value, read as (time, refunded), only grows.
// A claim writes a time at least Window (1 ms or more) above a counted
// previous time, or at least 1 ns above a refunded one (see claimable); a
// refund sets the refunded bit of a time once; the tombstone is written
// once, and never replaced. So a slot never holds the same value twice, and
// an ABA on a slot cannot make a stale CAS succeed. Nothing ever lowers a
// time (Take does not take its claims back, on purpose): a write that did
// could bring an old value back, and with it a stalled claimer's CAS, on a
// slot another caller had moved on from.
//
// The one exception is packed.MaxStamp, 2^61 − 2 ns (about 73 years) after
// the limiter's epoch (logged times count from the clock reading New made),
// reached by the clock (readings are clamped to it) or by
// as many 1 ns bumps: there the bump saturates (see claimable), a claim over
// a refunded entry at MaxStamp logs at MaxStamp itself, and the slot's value
// can recur two rounds later, its refunded bit and parity having cycled, so
// a stalled CAS can land late. That is harmless: every time logged after one
// at MaxStamp is MaxStamp too, no entry at MaxStamp is ever expired (nor its
// cell tombstoned), and a late CAS on a recurring value either replaces a
// refunded entry with a counted one (the claim of a later round, made early)
// or marks one counted entry as refunded, all at MaxStamp: the key never
// holds more than L counted requests, and a refund marks no more than it
// owes.

// Order: the logged time of claim h is max(now, time of claim h − 1), read
// from the newest slot while head is h, so logged times never decrease in
// claim order, and the slot under the head always holds the oldest of the
// last L. That is what makes a decision on that single slot exact for a
// sequential caller: fewer than L requests in (t − Window, t] if and only if
// the oldest of the last L is at or before t − Window. With a clock that
// never goes back, a logged time lies within its call, up to the 1 ns bumps:
// at or after the caller's clock read, and no later than the clock at the
// CAS that wrote it, since the newest slot's time was itself logged by an
// earlier call, except that a claim over a refunded entry logged at or after
// its own time is logged 1 ns after it (see claimable), so a frozen clock
// that saw k such claims can leave a logged time k ns ahead of the clock.
// Under concurrency every decision is therefore the exact decision for some
// time within its call (linearisable), to within those nanoseconds.
//
// Liveness: every failed CAS and every restart follows another caller's
// successful CAS (a claim, a head advance or a tombstone), so some caller
// always makes progress; nobody waits for a stalled one, whose in-flight
// claim anyone completes by advancing the head. (The key's map entry is
// another matter: inserting a key, replacing a tombstoned cell and deleting
// it lock one bucket of the map, briefly, as xsync does.) A lost claim
// retries at once, and a pending one is helped at once: a pause of 4 to 64
// spins after a loss, or before helping, measured slower on two cores with
// one hot key (the median ratio to the mutex port from 1.29 to about 1.5).
// A denial is only ever given on a slot whose value was read while head was
// h, so it is justified by L logged requests no older than Window at the
// caller's time. Take with n > 1 is the one exception (see Limiter.Take).
//
// Sweep: kill tombstones slot h mod L by CAS while head is h, after checking
// that the newest logged time, hence every one, is expired at the sweep's
// clock. From then on no claim can land (they all CAS slot h mod L while
// head is h) and head cannot advance (H), so the cell is frozen; a claimer
// that reads the tombstone takes a fresh cell from the map and reads the
// clock again. With a clock that never goes back, the frozen cell held
// nothing a fresh one would not hold at any later time; after a step back,
// the fresh cell decides at the clock reading, where the frozen one would
// have logged at its newest time and counted its requests there.
type cell struct {
	head  atomic.Uint64
	slots []atomic.Int64 // stamps XOR freshStamp
	// hint is where the next count of the free entries (Limiter.free)
	// starts looking: the claim number where the counted entries began, or
	// the count, as hintAt decodes it. Only a guess: no decision depends on
	// it.
	hint atomic.Uint64
}

// freshStamp is packed.PackStamp(packed.MinStamp, 1), the stamp of a slot
// no request ever claimed.
const freshStamp int64 = math.MinInt64 | 1

func (c *cell) load(i uint64) int64 {
	return c.slots[i].Load() ^ freshStamp
}

func (c *cell) cas(i uint64, old, new int64) bool {
	return c.slots[i].CompareAndSwap(old^freshStamp, new^freshStamp)
}

// snapshot is what a claimer reads of a cell with head h: the slot under
// the head and the time of the newest claim.
type snapshot struct {
	h      uint64
	i      uint64 // h mod L
	round  uint64 // h / L
	v      int64  // stamp of slot i
	newest int64  // logged time of claim h − 1, packed.MinStamp when h == 0
}

// read takes a snapshot of c, consistent in that head was h during all of
// it; it reports false, and the caller reads again, if head moved.
func (c *cell) read() (s snapshot, ok bool) {
	s.h = c.head.Load()
	L := uint64(len(c.slots))
	s.i, s.round = s.h%L, s.h/L
	s.v = c.load(s.i)
	s.newest = packed.MinStamp
	switch {
	case s.h == 0:
	case L == 1:
		// The newest slot is slot i itself, just read: claim h − 1 unless
		// pending, which every caller handles before it uses newest.
		s.newest, _ = packed.UnpackStamp(s.v)
	case s.i == 0:
		s.newest, _ = packed.UnpackStamp(c.load(L - 1))
	default:
		s.newest, _ = packed.UnpackStamp(c.load(s.i - 1))
	}
	return s, c.head.Load() == s.h
}

// pending reports whether slot i already holds claim h, whose head advance
// is still to come.
func (s *snapshot) pending() bool {
	_, parity := packed.UnpackStamp(s.v)
	return parity == s.round&1
}

// claimable reports whether a claim at time t may replace stamp v, the
// oldest of the last L: v's request left the window (its time is at or
// before t − window) or was refunded. It also returns the time the claim
// logs at: t, or, over a refunded stamp of time t or later (a frozen clock),
// 1 ns after it, so that the slot's value still grows. That bump saturates
// at packed.MaxStamp (2^61 − 2 ns, about 73 years after the limiter's epoch):
// over a refunded stamp of time MaxStamp the claim logs at MaxStamp itself,
// and the slot's time stops growing (see No repeated value on cell).
func claimable(v, t, window int64) (at int64, ok bool) {
	tv, _ := packed.UnpackStamp(v)
	if packed.IsRefunded(v) {
		return min(max(t, tv+1), packed.MaxStamp), true
	}
	return t, tv <= t-window
}

// at returns the slot at claim offset k from the head (claim h + k, which
// holds claim h + k − L while unclaimed).
func (c *cell) at(h, k uint64) uint64 {
	return (h + k) % uint64(len(c.slots))
}

// kill tombstones c when every request it logged is expired at now (at or
// before now − window), and reports whether c is dead: tombstoned now, or
// before. It fails, keeping c, if
// a claim is in flight or lands meanwhile.
func (c *cell) kill(now, window int64) bool {
	s, ok := c.read()
	if ok && s.v == packed.StampDead {
		return true // already killed by a concurrent sweep: delete it if still mapped
	}
	if !ok || s.pending() || s.newest > now-window {
		return false
	}
	// Times are in claim order, so the newest is the latest; refunded entries
	// still in the window keep the key, which only delays its eviction. Only slot i can
	// change while head is h, and the CAS fails if it did.
	return c.cas(s.i, s.v, packed.StampDead)
}
