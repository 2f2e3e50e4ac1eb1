// Package slidingcounter is a lock-free keyed sliding window counter rate
// limiter: each key may pass about Limit requests in any span of length
// Window, estimated from two counts per key instead of a log of timestamps.
//
// # Model
//
// Time is cut into windows of length Window, aligned as in fixedwindow: window
// i covers [i·Window, (i+1)·Window), so the window holding now starts at
// now − now mod Window (floored, so a negative clock works the same way). A
// key keeps prev, the requests its previous window admitted, and cur, those
// its current window admitted so far. At now, e = now − (start of now's
// window) into it, the key's estimate of the requests in the last Window is
//
//	est = ⌊prev·(Window − e)/Window⌋ + cur
//
// with prev's share rounded down (to the nanosecond: e is exact). Take(key, n)
// passes when est + n ≤ Limit, and then adds n to cur. When the clock enters
// the next window, cur becomes prev and cur starts at zero; when it skips two
// windows or more, both are zero. Allow is Take(key, 1).
//
// With 10 per second, 10 requests at 0.9 s leave prev = 10 at 1.0 s, so
// nothing passes there; at 1.1 s prev weighs ⌊10·0.9⌋ = 9, so one request
// passes; at 1.5 s prev weighs 5, so four more pass (cur = 5); from 2.0 s
// prev is the 5 of window 1.
//
// A clock that steps back into an earlier window does not reset anything: the
// request counts against the key's stored, newer window, weighed as if made at
// that window's start (est = prev + cur). Only a clock that reaches a later
// window moves the counts on.
//
// # Error bound
//
// The estimate assumes that prev's requests were spread evenly over the
// previous window. What holds exactly, with a clock that never decreases: let
// t be any instant, e its offset into its window i, P the requests window i−1
// admitted and P_t those of them inside the span (t − Window, t], that is
// more than e into window i−1. Then the requests admitted in (t − Window, t]
// number at most
//
//	Limit + P_t − ⌊P·(Window − e)/Window⌋
//
// since the last admission u ≤ t of window i checked ⌊P·(Window − e_u)/
// Window⌋ + cur ≤ Limit with e_u ≤ e. The excess over Limit is exactly the
// error of the estimate of prev's share. Hence:
//
//   - In every aligned window at most Limit pass (cur never exceeds Limit).
//   - If window i−1's requests were spread evenly enough that the overlap
//     holds at most ⌈P·(Window − e)/Window⌉ of them, at most Limit + 1 pass in
//     any span of length Window.
//   - In the worst case, P_t ≤ P ≤ Limit, so at most Limit + ⌈P·e/Window⌉ ≤
//     2·Limit pass in a span of length Window. The bound is tight: Limit
//     requests in the last nanosecond of a window and Limit more 2 ns before
//     the end of the next all pass, as ⌊Limit·2/Window⌋ = 0. Use slidinglog
//     when no span may ever hold more than Limit.
//
// The tests check the first bound at every admission of random traffic
// against an exact sliding log.
//
// # Decisions
//
// Take returns, with est the estimate above (after the call when allowed):
//
//   - Remaining: Limit − est, the single requests that would still pass now
//     (0 when a clock read behind the stored window sees est above Limit).
//   - RetryAfter: 0 when allowed; when denied with n ≤ Limit, the exact
//     smallest wait after which the same request passes if nothing else is
//     taken: made 1 ns earlier it is still denied. It falls within the current
//     window when cur + n ≤ Limit (prev's weight decays enough), else in the
//     next one, where the current count has become prev; never further. Never
//     for n > Limit or n < 0.
//   - ResetAfter: the smallest wait after which est is zero (both counts have
//     no effect: the full Limit would pass); 0 when it already is. At most two
//     windows.
//
// Both durations are hotlimit.Never when the wait would end past
// math.MaxInt64, the largest reading a clock makes: no clock reaches its end;
// and when it is longer than a Duration holds (about 292 years, which only a
// clock stepped back that far behind the key's window, or a wrapped window
// index, reads).
//
// Take(key, 0), Take(key, n > Limit) and Take(key, n < 0) only report: they
// never insert a key nor change one.
//
// # State and ranges
//
// Each key holds one 64-bit word, changed only by compare-and-swap:
//
//	| window index mod 2^30 (30 bits) | prev count (17 bits) | cur count (17 bits) |
//	| bits 63..34                     | bits 33..17          | bits 16..0          |
//
// Limit lies in [1, 131070] (2^17 − 2: the all-ones word is the tombstone of
// an evicted key). Window lies in [1ms, 366 days]. The index is kept modulo
// 2^30: a stored index less than 2^29 windows behind the clock's reads as an
// older window, one 2^29 or more behind as a newer one (a clock that stepped
// back). With the smallest window, 1 ms, 2^29 windows are about 6.2 days (with
// 1 s, 17 years): a key idle for longer than that without a Sweep may read as
// belonging to a future window and be denied until the clock reaches it. A
// Sweep from 2 to 2^29 − 1 windows after a key's last request evicts it and
// removes that hazard, so Sweeps at least every 2^29 − 2 windows meet every
// idle key in time; run Sweep at least that often when windows are short.
// WithAutoSweep alone does not: it visits keys only as new keys arrive (and
// as refunds empty keys), so the keys of a set that stops growing may go
// unvisited for good.
//
// The estimate's product prev·(Window − e) may need 72 bits; it is computed in
// 128 bits (math/bits), so no range of the layout overflows. Allow decides
// with two 64×64-bit multiplications and no division beyond the window index.
//
// Memory: a key costs its slot in the map's table (16 bytes, in a table from
// 3/8 to 3/4 full as keys come) and one node holding its 8-byte cell, a link
// and a copy of the key: 32 bytes for a key of up to 15 bytes, 48 for one of
// up to 31, 64 for one of up to 47. About 66 bytes in all for a 12-byte key
// (cd bench && go run ./cmd/memory -impl slidingcounter).
//
// # Refunds
//
// A Limiter is a hotlimit.Refunder: TakeReceipt is Take plus a receipt, and
// Refund lowers the count of the receipt's window by its n, the current or
// the previous count, exactly as if the Take had not been made; two windows
// later it gives nothing. A refund that empties both counts evicts the key, as
// Sweep would (both counts zero equal no key): the key's next request
// allocates its cell again. Refund is one more writer of the state word, by
// compare-and-swap like the others (refund.go).
//
// # Eviction
//
// Sweep evicts every key whose state equals a fresh key's now: both counts
// read zero, as its stored window is older than the previous one (a refund
// that empties both counts evicts the key itself; Sweep deletes it from the
// map). With a clock that never goes back, evicting it changes no decision.
// Sweep swaps a tombstone into an idle key's word by compare-and-swap, so it
// never races a concurrent request into a lost or duplicated admission.
// WithAutoSweep makes insertions sweep by themselves; nothing runs in the
// background.
//
// A Limiter is safe for concurrent use by any number of goroutines; Allow and
// Take on an existing key take no lock and allocate nothing.
package slidingcounter
