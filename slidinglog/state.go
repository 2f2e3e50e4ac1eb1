package slidinglog

import (
	"math"
	"sync/atomic"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// cell is one key's log: a ring of limit slots and a head that lags the
// claims made so far by a few.
//
// Claim k (k = 0, 1, 2, ...) logs the k-th admitted request of the key in
// slot k mod L, in round k / L, as packed.PackStamp(t, round), where t is
// the request's logged time, in nanoseconds since the limiter's epoch (see
// Limiter.clamp). So slot k mod L holds, before
// claim k, the time of claim k − L: the oldest of the last L requests.
//
//	head:  a claim number at or below the number of claims landed, by at most maxLag(L)
//	slot:  | logged time, ns (62 bits) | refunded | parity of the round that wrote it |
//
// Slots are stored XORed with freshStamp, so that the zero value of a slot,
// as make returns it, reads as freshStamp: time packed.MinStamp, parity 1,
// the parity of round −1. A fresh ring therefore reads as L requests logged
// at the dawn of time, all expired, and round 0 finds every slot unclaimed.
// packed.StampDead is the tombstone Sweep swaps into the slot of the next
// claim.
//
// # Protocol
//
// A claimer reads head h0, then the slots from h0 mod L on: a slot whose
// stamp has the parity of the round its claim number falls in holds that
// claim, landed; the first that has not is the slot of h, the next claim,
// holding v, claim h − L. It takes the newest logged time from slot
// (h − 1) mod L: the last slot scanned, or, when none was, that slot read
// after slot h mod L, which must hold claim h − 1 (its round's parity, no
// tombstone), else the claimer starts again (below). It then reads head
// again, and goes on only if head is at most h. It never scans past
// h0 + maxLag(L): there it advances the head to what it scanned, by
// head.CompareAndSwap(h0, h), and starts again. Then v's time is the limit's
// verdict: not expired (and not refunded), deny; expired or refunded, CAS
// slot h mod L from v to the new stamp. A claimer whose claim is the
// advanceAt(L)-th or a later one from h0 (h + 1 − h0 ≥ advanceAt(L): every
// claim when L ≤ 2) then advances the head past it, by
// head.CompareAndSwap(h0, h+1), which fails harmlessly if another caller
// moved the head; the others leave it, so that under contention the head's
// line is written once every few claims, and the slots' line alone moves
// from core to core.
//
// Invariant H: head never exceeds the claims landed (it moves only over
// claims a caller saw landed), and the claims landed never exceed head +
// maxLag(L): a claim h lands only from a scan that started at head h0 with
// h < h0 + maxLag(L), and head only grows.
//
// Claims land in order: claim h's CAS needs slot h mod L to hold v, read
// after the caller saw claim h − 1 landed (or read head h0 = h, and every
// claim below head landed). Why the scan reads each slot right: when it read
// slot j (h0 ≤ j ≤ h), claims 0 to j − 1 had landed, and head was at most
// h, as read after it, so no claim from h + maxLag(L) on had (by H, claim
// k lands only once head is past k − maxLag(L)). So slot j held claim
// j − L, claim j (its round's parity, the other's) or a later claim of
// that slot, which is past h + maxLag(L) or lands after claim h: claim
// j + 2L, of claim j's parity, is past it (h < h0 + maxLag(L) ≤ j + L), so
// a slot read as landed holds claim j; claim j + L, of claim j − L's
// parity, is past it too when j = h, so the slot that ends the scan holds
// claim h − L. A tombstone is told apart by its value. The newest slot,
// (h − 1) mod L, read after slot h mod L when the scan found no claim past
// the head, can hold claim h − 1 + L (which is below h + maxLag(L) when
// maxLag(L) = L), or the tombstone of that claim's slot: claims h to
// h + L − 2 landed between the two reads, and v is no longer in slot h mod
// L. The parity tells it from claim h − 1 (claim h − 1 + 2L is past
// h + maxLag(L)), and the caller starts again; paired with v, its time would
// be the newest of a ring whose oldest entry is no longer there.
//
// A slot CAS from v succeeds only if no claim landed on the slot since the
// caller's read: no slot ever holds the same value twice (below). So every
// successful claim CAS is claim h of round h / L, made after claim h − 1,
// over claim h − L (or the fresh value). The same holds for any check a
// caller makes by reading slot h mod L again (cell.still): while it holds v,
// claim h has not landed, nor any later one, so every slot read meanwhile
// held the claim the snapshot says; only refunds, which set a bit, can have
// marked them.
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
// from slot (h − 1) mod L before claim h landed, so logged times never
// decrease in claim order, and the slot of the next claim always holds the
// oldest of the last L. That is what makes a decision on that single slot exact for a
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
// Liveness: every failed CAS and every restart follows a successful CAS (a
// claim, a mark, a head advance or a tombstone), and the head advances only
// over landed claims, so some caller always makes progress; nobody waits for
// a stalled one: a claim is one CAS, and a claimer that stalls before
// advancing the head leaves it to the next scans. (The key's map entry is
// another matter: inserting a key, replacing a tombstoned cell and deleting
// it lock one shard of the map's table, briefly.) A lost claim
// retries at once: a pause of 4 to 64 spins after a loss measured slower on
// two cores with one hot key, when each claim also advanced the head.
// A denial is only ever given on a slot read while its claim had not landed
// and the one before had, so it is justified by L logged requests no older
// than Window at the caller's time. Take with n > 1 is the one exception
// (see Limiter.Take).
//
// Sweep: kill tombstones slot h mod L, h the next claim, by CAS from v, after
// checking that the newest logged time, hence every one, is expired at the
// sweep's clock. From then on no claim can land (claims land in order, and
// claim h's CAS expects v) and head cannot pass h (H), so the cell is
// frozen; a claimer
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

// snapshot is what a claimer reads of a cell: h, the next claim, the slot
// under it and the time of the newest claim.
type snapshot struct {
	h0     uint64 // the head the scan started from
	h      uint64 // the next claim: claims 0 to h − 1 have landed, claim h has not
	i      uint64 // h mod L
	round  uint64 // h / L
	v      int64  // stamp of slot i: claim h − L's (or a tombstone)
	newest int64  // logged time of claim h − 1, packed.MinStamp when h == 0
}

// maxLag is how many claims past the head may land in a ring of L slots:
// at most L, so that the parity of a slot tells which of its two possible
// claims it holds (see cell), and at most 16, so that a scan from the head
// stays within a few cache lines.
func maxLag(L uint64) uint64 { return min(L, 16) }

// advanceAt is how many claims from the head, its own included, a claimer
// must have landed to advance the head after it (claim h from head h0 when
// h + 1 − h0 ≥ advanceAt(L)): half the lag allowed, so that a scan is most
// often a few slots long, and a claimer rarely writes the head's line.
func advanceAt(L uint64) uint64 { return (maxLag(L) + 1) / 2 }

// read takes a snapshot of c: from head h0 it scans the slots of the claims
// that landed past it (their slots hold a stamp of their own round) to h,
// the first that has not. It reports false, and the caller reads again,
// when the head moved past h meanwhile (then the slots read may belong to
// later rounds), when the slot of claim h − 1, read after the slot of claim
// h, no longer held claim h − 1 (claims from h on landed in between), or
// when it found maxLag landed claims past the head, after advancing the
// head over them. A tombstone under h is returned as v.
func (c *cell) read() (s snapshot, ok bool) {
	return c.scan(c.head.Load())
}

// scan is read from head h0, read by the caller.
func (c *cell) scan(h0 uint64) (s snapshot, ok bool) {
	L := uint64(len(c.slots))
	D := maxLag(L)
	s.h0, s.h = h0, h0
	s.i, s.round = h0%L, h0/L
	s.newest = packed.MinStamp
	for {
		s.v = c.load(s.i)
		if s.v == packed.StampDead {
			break
		}
		t, parity := packed.UnpackStamp(s.v)
		if parity != s.round&1 {
			break // claim h − L: claim h has not landed
		}
		// Claim h landed: it is the newest so far.
		s.newest = t
		s.h++
		if s.i++; s.i == L {
			s.i, s.round = 0, s.round+1
		}
		if s.h-h0 >= D {
			// Claims h0 to h0 + D − 1 landed: the CAS keeps invariant H,
			// since it succeeds only while the head is still h0, and then
			// no claim from h0 + D on has landed (H), so each slot read
			// held claim j − L or claim j, and its parity said claim j. It
			// fails only when another caller moved the head on, over
			// claims it saw landed: then read again.
			c.head.CompareAndSwap(h0, s.h)
			return s, false
		}
	}
	if s.h == h0 && s.h > 0 {
		// The newest slot, (h − 1) mod L, was not scanned: read it. When
		// L = 1 it is slot i itself, whose claim h − 1 is v. At h = 0 no
		// claim was made and newest is packed.MinStamp.
		if L == 1 {
			s.newest, _ = packed.UnpackStamp(s.v)
			return s, c.head.Load() <= s.h
		}
		j, round := s.i-1, s.round // claim h − 1's slot and round
		if s.i == 0 {
			j, round = L-1, round-1
		}
		nv := c.load(j)
		var parity uint64
		s.newest, parity = packed.UnpackStamp(nv)
		if nv == packed.StampDead || parity != round&1 {
			// Not claim h − 1: read after slot i, the slot can hold claim
			// h − 1 + L, or the tombstone of that claim's slot, when the
			// claims from h on landed in between (see cell), and v is then
			// no longer in slot i. Read again.
			return s, false
		}
	}
	return s, c.head.Load() <= s.h
}

// still reports whether slot i still holds what s read: then claim s.h has
// not landed since s was read, nor any later one (claims land in order), and
// no tombstone either: every slot read since holds the claim s says.
func (c *cell) still(s *snapshot) bool {
	return c.load(s.i) == s.v
}

// landed records that claim h, made by a caller whose scan started at head
// h0, has landed: when claims h0 to h number advanceAt or more, the claimer
// advances the head past it (which fails harmlessly if another caller
// moved the head meanwhile: the head then lies between h0 and the landed
// claims, as always). The CAS keeps invariant H: claim h, the caller's
// own, landed, and claims land in order, so every claim below h + 1 has; and
// the head only grows.
func (c *cell) landed(h0, h, L uint64) {
	if h+1-h0 >= advanceAt(L) {
		c.head.CompareAndSwap(h0, h+1)
	}
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
	if !ok || s.newest > now-window {
		return false
	}
	// Times are in claim order, so the newest is the latest; refunded entries
	// still in the window keep the key, which only delays its eviction. The
	// CAS fails if claim h landed since the read (or a refund marked slot
	// i): no slot holds a value twice.
	return c.cas(s.i, s.v, packed.StampDead)
}
