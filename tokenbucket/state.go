package tokenbucket

import (
	"sync/atomic"

	"github.com/hotlimit/hotlimit/internal/packed"
)

// cell is one key's state, a single word laid out by internal/packed
// (bucket.go), with F and T chosen per limiter (see layoutFor):
//
//	| tokens, in units of 2^−F token (64−T bits) | u(last refill) mod 2^T (T bits) |
//	| bits 63..T                                 | bits T−1..0                     |
//
// u(t) = ⌊t·limit·2^F / window⌋ counts the units refilled from the epoch to t
// (nanoseconds since the epoch). The token field holds [0, Cap], Cap =
// burst·2^F (the refill is still limit per window); the timestamp is the u of the latest clock
// reading of an admission or a refund that wrote the word, modulo 2^T. A new key's word is Pack(Cap, 0): full, and a full
// word's timestamp is never read. packed.BucketDead, all ones, is the
// tombstone Sweep swaps in; no live word equals it (its token field exceeds
// Cap).
//
// Writers: the word is only ever written by compare-and-swap, by Allow and
// Take (admissions), by Refund (which gives tokens back, or tombstones a
// word it would fill: see refund.go) and by kill (the tombstone); nobody
// stores to it after initCell. A denial writes nothing.
//
// The CAS loop of Allow and Take keeps this invariant: a key's live word is
// its bucket after the admissions (and refunds) whose CAS succeeded, each
// applied once, in CAS order, by the model's rule on the units grid: refilled by exactly
// u(now) − u(last) units up to Cap, then lowered by the n tokens taken; its
// tokens stay in [0, Cap] and its timestamp is the latest clock reading
// among those writes (a refund refills to its own reading, as an admission
// does).
//
//   - Concurrent writers. The new word is a function of the old word's value and
//     the caller's now only. The CAS succeeds only if the word still holds the
//     value the caller read, so reading, refilling, deciding and writing take
//     effect as one step at the CAS; if another caller wrote in between, the
//     CAS fails and the loop decides again from the new value. (The value
//     reappearing in between, ABA, is harmless for the same reason: the
//     decision depends on the value, not on its history. The one value that
//     must not come back is a full word, which the wrap guard's sweep judges
//     (guard.go): only a new cell starts full, and a refund that would fill
//     a word tombstones it instead.) Tokens are only
//     lowered to tokens − n ≥ 0 after a refill capped at Cap, so they stay in
//     [0, Cap]. A denial writes nothing: it takes effect at its Load, where the
//     state it judged was the word's. A caller whose reading is behind the
//     word's timestamp (a write may have landed between its reading and its
//     Load) reads the clock again and decides again before it denies, so
//     that it never judges a key emptier than it is at its call; it denies
//     on a reading behind the timestamp only when that reading was taken
//     after it loaded the same word (the clock is behind the key's latest
//     write). See admit.
//   - Order of clock readings. Callers whose CAS land in an order other than
//     their clock readings' cannot create tokens: refills telescope (units
//     from last to now are added exactly once, since each write moves last to
//     the now it refilled to), and a caller whose now is behind the stored last
//     refills nothing and keeps the later last.
//   - Sweep. kill swaps the tombstone in by CAS from a word it found full at
//     the sweep's time s. If an admission's CAS lands first, kill's fails and
//     kill judges the new word again (it stays if it is not full at s). If
//     kill's lands first, the admission's fails (it expects a
//     live word), the caller reads the tombstone, takes the key's fresh cell
//     from Revive, reads the clock again and decides again. So no admission is
//     recorded in a dead cell (none is lost) and a dead cell never comes back
//     to life (none is counted twice). The fresh cell is full, which is what
//     the killed one held at s and at every later time; and every caller of the
//     fresh cell read the clock after the kill (after Revive, or after the
//     map lookup, keyed's Find or Get, read the new cell from the map: Find
//     confirms the node's key after the reading, but reads the node from
//     the map before it), so at s or later.
//   - Wrap-around. A word is read only under a wrap-guard generation that
//     keeps its timestamp within Range of the reader's now; a caller that sees
//     the generation change after its Load reads the clock again (guard.go).
//   - Progress. A CAS fails only because another caller's CAS or a kill
//     succeeded, and a generation changes only when a sweep completed, so every
//     retry follows someone's progress: nobody waits for anybody. A denial
//     reads the clock again only for a word other than the one it last read
//     again for, so each further reading follows another write. (A word
//     value that comes back, as a refund can make it, may be read again for
//     once more: after the writes that changed it and brought it back.)
type cell struct {
	word atomic.Uint64
}

// kill tombstones c by CAS when its bucket is full at s (units), or when
// allFull says every live word is full at the sweep's time (guard.go),
// reading c only while the wrap-guard generation is still gen. It reports
// whether c is dead (tombstoned now, or before: by a sweep or a filling
// Refund), and ok = false when it found the generation
// changed (a newer sweep completed), leaving c alone.
//
// The CAS loop keeps the wrap guard's lower bound: when it returns with c
// live, the last word it read, under gen, was not full at s, or c was dead
// (a concurrent sweep killed it and deletes it). A kill is decided only on the
// word it replaces, so the CAS fails, and c is kept, if any write landed
// since the Load; that write may be a caller's that read the clock long
// before s and stalled (an admission from a full word writes that old reading
// as its timestamp), so the loop judges the new word again rather than
// leaving it unread. Each retry follows another writer's successful CAS.
func (l *Limiter) kill(c *cell, gen int64, s uint64, allFull bool) (killed, ok bool) {
	for {
		w := c.word.Load()
		if l.sweepLoaded != nil {
			l.sweepLoaded()
		}
		if l.swept.Load() != gen {
			return false, false
		}
		if w == packed.BucketDead {
			return true, true // killed by a concurrent Sweep or a filling Refund: delete it if still mapped
		}
		if !allFull {
			tokens, last := l.b.Unpack(w)
			if tokens, _ = l.b.Refill(tokens, last, s); tokens < l.b.Cap {
				return false, true
			}
		}
		if c.word.CompareAndSwap(w, packed.BucketDead) {
			return true, true
		}
	}
}
