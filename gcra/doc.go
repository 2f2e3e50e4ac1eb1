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
// pass at once, then one every 200 ms. x/time/rate's rate.NewLimiter(r, b)
// is New(limit, window, hotlimit.WithBurst(b)) with limit/window = r, as for
// package tokenbucket (whose documentation compares the two); with exact
// ticks (see Arithmetic) every decision is the exact model's, and differs
// from rate's only where rate passes a request whose wait, under 1 ns, it
// rounds down to none.
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
// All arithmetic is integer. The limiter counts time in ticks chosen so that
// T is a whole number of ticks: every TAT is exact in ticks, and no rounding
// of T accumulates, however many requests pass.
//
//   - Exact ticks. When D = Limit/gcd(Window, Limit) is at most MaxScale (16),
//     a tick is 1/D ns and T = Window/gcd(Window, Limit) ticks. A clock
//     reading is a whole number of ticks, and every decision is exactly the
//     model's. D is 1 whenever Limit divides Window in nanoseconds (100 per
//     second, 60 per minute, 5 per second ...), 3 for 3 per second.
//   - Fine ticks. Otherwise (17 per second, 1<<20 per second, 1<<20 per
//     millisecond) a tick is 1/2^F of T: T = 2^F ticks, with F the largest
//     at most MaxFracBits (32) that keeps the limiter's time for MinTime
//     (below). F is 30 for 17 per second, 14 for 1<<20 per second, 4 for
//     1<<20 per millisecond, and never below 4 within New's ranges. A clock
//     reading t nanoseconds after the epoch counts as ⌊t·Limit·2^F/Window⌋
//     ticks: every decision is exactly the model's on that clock, floored to
//     a tick, which lags the true clock by less than one tick, 1/2^F of a
//     token (1/16 at most). The floors do not add up: between any two
//     readings the floored clock moves by the true time ± less than a tick,
//     however many calls come in between. So in any interval [a, b] a key
//     passes at most Burst + (b − a)·Limit/Window + 1/2^F requests (the
//     model's bound and less than a tick more: at most one request more,
//     only where the model's count falls short of a whole number by under
//     1/2^F), and a key kept drained passes Limit per Window, ±1, as the
//     model does: 1,048,576 per millisecond at 1<<20 per millisecond.
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
// ticks since the epoch. 0, the epoch, is a fresh key (full at any time, so a
// full key and a fresh one decide alike); 2^64−1 is the tombstone of an
// evicted key; live words stay below 2^63.
//
// Limit lies in [1, 1048576], Window in [1ms, 24h], Burst in [1, 1048576],
// and Burst·Window/Limit, the time a drained key takes to refill, is at most
// MaxBurstSpan (366 days). The limiter's time stops where its TAT could
// reach 2^63 ticks, (2^63 − 1 − Burst·T) ticks after its epoch, checked at
// New: at least MinTime (2^58 ns, over 9 years) with fine ticks, 17 years
// with exact ones, 291 years with D = 1 (292 less the burst's refill time).
// Past it, keys no longer refill.
// It stops sooner when the clock's last reading, math.MaxInt64, comes
// first: a wait that would end after it is hotlimit.Never.
//
// Memory: a key costs its slot in the map's table (16 bytes, in a table from
// 3/8 to 3/4 full as keys come) and one node holding its 8-byte cell, a link
// and a copy of the key: 32 bytes for a key of up to 15 bytes, 48 for one of
// up to 31, 64 for one of up to 47. About 66 bytes in all for a 12-byte key
// (cd bench && go run ./cmd/memory -impl gcra).
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
