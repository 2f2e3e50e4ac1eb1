// Package gcra is a lock-free keyed GCRA (generic cell rate algorithm, the
// leaky bucket as a meter) rate limiter: each key may pass Burst requests at
// once, and is refilled continuously at Limit per Window.
//
// # Model
//
// GCRA is the token bucket of package tokenbucket, kept as one timestamp
// instead of a count and a timestamp. With T = Window/Limit, the emission
// interval, each key holds its theoretical arrival time (TAT): the time at
// which it would be full again. At time t a key holds
//
//	tokens(t) = Burst − max(0, TAT − t)/T
//
// and Take(key, n) passes when tokens(t) ≥ n, that is when
// max(TAT, t) + n·T ≤ t + Burst·T, and then sets TAT = max(TAT, t) + n·T; all
// or nothing. A new key is full: its TAT is "long ago". Burst defaults to
// Limit (hotlimit.WithBurst changes it), and then this is exactly the token
// bucket's reference model: capacity Burst, refill Limit per Window,
// continuous. With 5 per second, 5 requests pass at once, and 400 ms after
// the key emptied exactly 2 more pass. With 5 per second and a burst of 7, 7
// pass at once, then one every 200 ms.
//
// Time is the limiter's: nanoseconds since New read the clock (its epoch); a
// reading before the epoch counts as the epoch. A clock that goes back
// refills nothing: the TAT never moves back, and the key is judged by it
// against the earlier reading, so it looks emptier by the step (d·Limit/
// Window tokens for a step of d) until the clock catches up. (The token
// bucket instead keeps the tokens it had; with a clock that never goes back
// the two agree.) A denial changes nothing.
//
// # Arithmetic
//
// All arithmetic is integer and exact. Time is counted in units of 1/scale
// nanosecond, scale = Limit/gcd(Window, Limit), so that T = Window·scale/Limit
// is a whole number of units and every TAT is exact. scale is 1 whenever
// Limit divides Window in nanoseconds (100 per second, 60 per minute, 5 per
// second ...) and 3 for 3 per second. When Limit/gcd(Window, Limit) exceeds
// MaxScale (16), as for 1<<20 per second or 17 per second, the unit is 1/16
// ns and T is rounded up to it: the rate is then lower than Limit per Window
// by less than 1/(16·T), never higher, and decisions may differ from the
// exact model's by that much.
//
// # Decisions
//
// Take returns, for the key at the time of the call:
//
//   - Limit: the limit (requests per window, not the burst).
//   - Remaining: whole tokens left after the call, ⌊tokens⌋, at least 0.
//   - RetryAfter: 0 when allowed; when denied with 0 < n ≤ Burst, the least
//     duration after which the same Take(key, n) passes if nothing else is
//     taken meanwhile, to the nanosecond: RetryAfter − 1 ns later it is still
//     denied. It is TAT + n·T − Burst·T − now, rounded up to the nanosecond.
//     Never for n > Burst or n < 0.
//   - ResetAfter: the least duration after which the key is full again, as a
//     new key is: TAT − now rounded up, 0 when it is full.
//
// Take(key, 0), Take(key, n > Burst) and Take(key, n < 0) only report: they
// never insert a key nor change one.
//
// # State and ranges
//
// Each key holds one 64-bit word, changed only by compare-and-swap: its TAT in
// units since the epoch. 0, the epoch, is a fresh key (full at any time, so a
// full key and a fresh one decide alike); 2^64−1 is the tombstone of an
// evicted key; live words stay below 2^63.
//
// Limit lies in [1, 1048576], Window in [1ms, 24h], Burst in [1, 1048576],
// and Burst·Window/Limit, the time a drained key takes to refill, is at most
// MaxBurstSpan (366 days). The limiter's time stops at
// (2^63 − 1 − Burst·T)/scale nanoseconds after its epoch: at least 17 years,
// 292 years with scale 1. Past it, keys no longer refill.
//
// Memory: a key costs its map entry in an xsync.MapOf, the key's bytes and an
// 8-byte cell, about 100 bytes in all for short keys.
//
// # Refunds
//
// A Limiter is a hotlimit.Refunder: TakeReceipt is Take plus a receipt, and
// Refund moves the TAT back by the receipt's n·T less the time elapsed since
// the Take, never behind now: at the time of the Take it restores the key
// exactly, n·T later it gives nothing. Refund is one more writer of the
// state word, by compare-and-swap like the others (refund.go).
//
// # Eviction
//
// Sweep evicts every key that is full at the clock's current time (TAT ≤
// now): a new key starts full, so with a clock that never goes back, evicting
// it changes no decision. A key idle for Burst·Window/Limit is full. (A clock
// that later steps back behind the sweep finds the key fresh, where the kept
// key would have looked emptier.) Sweep swaps a tombstone into a full key's
// word by compare-and-swap, so it never races a concurrent request into a
// lost or duplicated admission. WithAutoSweep makes insertions sweep by
// themselves; nothing runs in the background.
//
// A Limiter is safe for concurrent use by any number of goroutines; Allow and
// Take on an existing key take no lock and allocate nothing.
package gcra
