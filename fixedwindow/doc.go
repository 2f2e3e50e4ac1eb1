// Package fixedwindow is a lock-free keyed fixed-window rate limiter: each key
// may pass at most Limit requests per window, and windows are aligned on the
// clock's origin: with the default clock (hotlimit.Monotonic), the process's
// start (in a testing/synctest bubble, the bubble's start); with a clock of
// Unix nanoseconds, whole UTC minutes, hours or days.
//
// # Model
//
// Time is cut into windows of length Window: window i covers
// [i·Window, (i+1)·Window), so the window holding now starts at
// now − now mod Window (floored, so a negative clock works the same way). A
// request passes while fewer than Limit requests of its key passed in the
// current window; Take(key, n) passes while count + n ≤ Limit. A new window
// starts every key at zero.
//
// Bursts across a boundary: a key may pass Limit requests at the very end of
// one window and Limit more at the start of the next, so 2×Limit can pass in
// a span much shorter than Window. That is the fixed-window algorithm, not a
// defect; use the slidinglog package when no span of length Window may hold
// more than Limit, or tokenbucket for a smooth rate. With 3 per second, 3
// requests at 10.900 s and 3 more at 11.050 s all pass.
//
// A clock that steps back into an earlier window does not reset anything: the
// request counts against the key's stored, newer window, as if it had been
// made then. Only a clock that reaches a later window starts a new count.
//
// # Decisions
//
// Take returns, with W the end of the window the request counted against
// (the stored window when the clock stepped back):
//
//   - Remaining: Limit minus the window's count after the call.
//   - RetryAfter: 0 when allowed; when denied with n ≤ Limit, W − now,
//     exactly: the same request made 1 ns earlier is still denied, and made
//     then it passes, as the next window starts at zero. Never for n > Limit
//     or n < 0.
//   - ResetAfter: W − now while the window's count is positive, else 0.
//
// Both durations are hotlimit.Never when W lies past math.MaxInt64, the
// largest reading a clock makes (the window holding it, or a later one a
// clock stepped back from): no wait reaches W; and when W − now is longer
// than a Duration holds (about 292 years, which only a clock stepped back
// that far, or a wrapped window index, reads).
//
// Take(key, 0), Take(key, n > Limit) and Take(key, n < 0) only report: they
// never insert a key nor change one.
//
// # State and ranges
//
// Each key holds one 64-bit word, changed only by compare-and-swap (the layout
// is in internal/packed, window.go):
//
//	| window index mod 2^42 (42 bits) | count (22 bits) |
//
// Limit lies in [1, 4194302] (2^22 − 2: the all-ones count is the tombstone of
// an evicted key). Window lies in [1ms, 366 days]. The index is kept modulo
// 2^42: a stored index less than 2^41 windows behind the clock's reads as an
// older window, one 2^41 or more behind as a newer one (a clock that stepped
// back).
// With the smallest window, 1 ms, 2^41 windows are about 70 years: a key idle
// for longer than that without a Sweep may read as belonging to a future
// window and be denied until the clock reaches it. Longer windows make that
// span longer still.
//
// Memory: a key costs its slot in the map's table (16 bytes, in a table from
// 3/8 to 3/4 full as keys come) and one node holding its 8-byte cell, a link
// and a copy of the key: 32 bytes for a key of up to 15 bytes, 48 for one of
// up to 31, 64 for one of up to 47. About 66 bytes in all for a 12-byte key
// (cd bench && go run ./cmd/memory -impl fixedwindow).
//
// # Refunds
//
// A Limiter is a hotlimit.Refunder: TakeReceipt is Take plus a receipt, and
// Refund lowers the count by the receipt's n while the receipt's window is
// the key's current one, exactly as if the Take had not been made; after the
// window ended it gives nothing. A refund that empties the window evicts the
// key, as Sweep would (a count of zero equals no key): the key's next request
// allocates its cell again. Refund is one more writer of the state word, by
// compare-and-swap like the others (refund.go).
//
// # Eviction
//
// Sweep evicts every key whose count is zero or whose stored window ended
// before the current one: its next request would start from zero anyway, so
// with a clock that never goes back, evicting it changes no decision. A clock
// that later steps back into the evicted window finds a fresh key. Sweep swaps
// a tombstone into an idle key's word by compare-and-swap, so it never races
// a concurrent request into a lost or duplicated admission. WithAutoSweep
// makes insertions sweep by themselves; nothing runs in the background.
//
// A Limiter is safe for concurrent use by any number of goroutines; Allow and
// Take on an existing key take no lock and allocate nothing.
package fixedwindow
