// Package slidinglog is a lock-free keyed sliding-log rate limiter: a request
// from a key passes when fewer than Limit requests of that key passed in the
// Window before it. It is exact: no span of length Window ever holds more than
// Limit admitted requests of a key, across window boundaries too, at the cost
// of Limit timestamps per key.
//
// # Model
//
// A request at time now passes when fewer than Limit requests of its key
// were logged in (now − Window, now]; it is then logged at now. Take(key, n)
// passes when fewer than Limit − n + 1 were, and logs n requests at now. With
// 4 per second, requests at 20.000 s fill the log; one at 20.900 s is denied;
// at 21.001 s the first four have left the window and four more pass.
//
// A clock that steps back is read as no time passing: a request is logged at
// the later of its clock reading and the key's newest logged time. (A request
// that takes the place of a refunded one logged at its own time or later, as
// with a frozen clock, is logged 1 ns after it; see Refund. That bump
// saturates at 2^61 − 2 ns, about 73 years, after the limiter's epoch (see
// State and ranges), the latest time a slot holds, to which later clock
// readings are clamped too:
// such a request is then logged at that very time. Nothing logged there ever
// leaves the window, so a key whose log holds only such requests admits only
// what refunds give back.)
//
// # Decisions
//
// Take returns, at time t (now, or the key's newest logged time if later):
//
//   - Remaining: the requests of the last Limit logged that are expired at t
//     (at or before t − Window) or refunded, after the call: how many single
//     requests would pass at t. It is counted on the log the call's own
//     (last) claim changed, so it is linearizable: under a frozen clock, the
//     allowed calls' Remaining values are Limit − 1, ..., 0, each exactly
//     once, whatever the interleaving. A call whose single request is
//     denied reports 0. After a Refund that read a later clock than the
//     call (racing it, or before a clock step back), the count can exceed
//     the single requests that pass at t: such a refund can mark a newer
//     entry where an older one is expired at its reading but not at t.
//   - RetryAfter: 0 when allowed. When denied with n ≤ Limit, o + Window − now,
//     where o is the time of the n-th oldest of the last Limit requests:
//     exactly, the same request made 1 ns earlier is still denied and made
//     then it passes, if nothing else is taken meanwhile. hotlimit.Never for
//     n > Limit or n < 0, and when o + Window is past the latest time the
//     limiter reads, 2^61 − 2 ns (see above), or past the clock's own end
//     (a reading of math.MaxInt64) if that comes first: o never leaves.
//     Under contention on one key (with other requests, or with a Refund
//     alone), or after a Refund and a clock step back, Take with n > 1 can
//     be denied with RetryAfter 1 ns although the requests might have
//     fitted, its first claims spent; see Limiter.Take. Limiter.RetryAfter
//     tells a Take's wait without making it, counting nothing.
//   - ResetAfter: until the newest logged request expires, 0 when none counts
//     in the window; hotlimit.Never when it expires past the latest time
//     the limiter reads, as for RetryAfter.
//
// Take(key, 0), Take(key, n > Limit) and Take(key, n < 0) only report: they
// never insert a key nor change one.
//
// # State and ranges
//
// Each key holds a ring of Limit slots and a head counter that lags the
// requests logged by a few, all changed by compare-and-swap only; an
// admission is one compare-and-swap on its slot, the head's is made once
// every few admissions (the protocol, with its safety and liveness argument,
// is documented on the cell type in state.go). A slot holds a logged time, a
// refunded mark and one bit of the ring round that wrote it
// (internal/packed, stamp.go):
//
//	| time, ns (62 bits, signed) | refunded (1 bit) | round parity (1 bit) |
//
// Limit lies in [1, 65536] and Window in [1ms, 366 days]. The limiter counts
// time from its epoch, the clock reading New makes, not from the clock's
// origin: a clock of Unix nanoseconds works the same in any year. Clock
// readings are clamped to ±2^61 ns (about ±73 years) around the epoch (the
// earliest, −2^61 ns + Window): the limiter's time stands still before and
// after that range. RetryAfter and ResetAfter count from the reading itself,
// so before the range they include the time the clock takes to reach it, and
// past it they are hotlimit.Never; so are they past math.MaxInt64, the
// latest reading of any clock, when the epoch lies within 2^61 ns of it. A
// Receipt's At is a reading of the clock, as the package hotlimit says, not
// a time since the epoch.
//
// # Refunds
//
// TakeReceipt and Refund give back what a Take took while it is still in the
// window: Refund marks that many of the oldest requests still counted in the
// window as refunded, and those no longer count. The current capacity comes
// back exactly; see Limiter.Refund for why this never gives back capacity
// that was not taken.
//
// Memory: a key costs its slot in the map's table, its node (a 40-byte cell,
// a link and a copy of the key: 64 bytes for a key of up to 15 bytes) and 8
// bytes per unit of Limit: about 178 bytes for Limit 10 and 12-byte keys
// (cd bench && go run ./cmd/memory -impl slidinglog -limit 10), 8 KiB for
// Limit 1000, 512 KiB at the maximum. Choose tokenbucket or
// fixedwindow when many keys have large limits.
//
// # Eviction
//
// Sweep evicts every key whose logged requests have all left the window: its
// next request finds the log of a new key, which, with a clock that never
// goes back, would decide the same (after a step back, the old log would
// still have held its requests at their later times). It
// swaps a tombstone into the slot of the key's next request by
// compare-and-swap,
// which freezes the ring, so it never races a concurrent request into a lost
// or duplicated admission; a request that meets the tombstone continues on
// the key's new cell. WithAutoSweep makes insertions sweep by themselves;
// nothing runs in the background.
//
// A Limiter is safe for concurrent use by any number of goroutines; Allow and
// Take on an existing key take no lock and allocate nothing.
package slidinglog
