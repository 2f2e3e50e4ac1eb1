// Package tokenbucket is a lock-free keyed token bucket rate limiter: each
// key holds up to Burst tokens (Limit unless hotlimit.WithBurst says
// otherwise), refilled continuously at Limit per Window, and a request takes
// one.
//
// # Model
//
// A new key starts full, with Burst tokens. On each request at time t the
// bucket is refilled lazily, tokens = min(Burst, tokens + (t − last)·Limit/
// Window), and the request passes when tokens ≥ 1, taking one; Take(key, n)
// passes when tokens ≥ n and takes n, all or nothing. So a key may burst
// Burst requests at once, then passes one every Window/Limit. With 5 per
// second, 5 requests pass at once, and 400 ms after the bucket emptied exactly
// 2 more pass; with 5 per second and a burst of 7, 7 pass at once, and 400 ms
// later 2. Burst defaults to Limit.
//
// Time is the limiter's: nanoseconds since New read the clock (its epoch); a
// reading before the epoch counts as the epoch. A clock that goes back refills
// nothing, and the bucket keeps the later time: it refills again only once the
// clock passes it. A denied request changes nothing, so with a clock that
// goes back, a bucket refills from the time of its latest admitted request
// (or refund).
//
// # Arithmetic
//
// Tokens are fixed point: a unit is 2^−F token, F chosen per limiter (see
// the table below). Refill is counted on a grid fixed at the epoch: u(t) =
// ⌊t·Limit·2^F/Window⌋ units have been refilled from the epoch to t, and a
// refill from last to now adds exactly u(now) − u(last). Refills telescope:
// however many requests split an interval, together they add exactly what one
// request at its end would, so there is no drift. Where the exact model lands
// on a whole token, u does too.
//
// Compared with the exact model (rational tokens, the same admissions; for
// refunds see below), the bucket's token count is within one unit of the
// model's. A request the model admits is admitted. A request the model denies is denied unless the model's
// tokens fall short by less than one unit, which can happen only when a clock
// reading is not a whole number of units; then it may pass. Over a long run,
// the requests passed are those of the exact model ±1, and never more than
// Burst + rate·(time since the epoch) plus the tokens refunded.
//
// A refund deducts the refill counted on the same grid, u(now) − u(r.At),
// what the bucket itself refilled since the Take (see Refund), where the
// exact model deducts (now − r.At)·Limit/Window. The two differ by less than
// a unit, either way, when a clock reading is not a whole number of units,
// and the differences of a key's refunds add up: with a clock that never
// goes back, after k refunds its count is within k + 1 units of the model's,
// and the margins above widen alike (a request the model admits by less than
// k + 1 units may be denied). A clock that steps back behind a refund voids
// the bound: a refund writes the key, and with it the refill up to its time,
// only when it gives something, and the rounding can make one of the two
// give a fraction of a unit and the other nothing; back behind it, the one
// that wrote holds that refill and the other not, up to the refund's tokens.
//
// # Decisions
//
// Take returns, for the bucket refilled to the time of the call:
//
//   - Remaining: whole tokens left after the call.
//   - Limit: the limit, requests per window (not the burst).
//   - RetryAfter: 0 when allowed; when denied with 0 < n ≤ Burst, the least
//     duration after which the same Take(key, n) passes if nothing else is
//     taken meanwhile, to the nanosecond: RetryAfter − 1 ns later it is still
//     denied. Never for n > Burst or n < 0.
//   - ResetAfter: the least duration after which the bucket is full again,
//     as a new key's is; 0 when it is full.
//
// Both durations saturate at hotlimit.Never: when the wait exceeds
// math.MaxInt64 nanoseconds (a clock more than about 292 years behind the
// epoch), when the limiter's time stops before it ends, or when it would end
// after math.MaxInt64, the last reading a clock makes. No duration is ever
// negative, and a denial never says 0.
//
// Take(key, 0), Take(key, n > Burst) and Take(key, n < 0) only report: they
// never insert a key nor change one.
//
// # State and ranges
//
// Each key holds one 64-bit word, changed only by compare-and-swap (the layout
// is in internal/packed, bucket.go):
//
//	| tokens, in units (64−T bits) | u(last refill) mod 2^T (T bits) |
//
// Limit lies in [1, 1048576], Window in [1ms, 24h] and Burst in [1, 1048576],
// with Burst·Window/Limit, the time an empty bucket takes to fill (its fill
// time), at most 366 days (MaxBurstSpan). The token field holds Cap =
// Burst·2^F units. New chooses F, the fraction bits, as the largest in [0, 32]
// whose timestamp field keeps at least 30 days and 4 fill times unambiguous
// (its Range: 2^(T−1) units of refill time); failing that, F = 0 if it keeps
// at least an hour and 4 fill times. Every accepted combination has such a
// layout: the fastest rate, 1048576 per 1 ms, keeps 69 minutes at F = 0, and
// at F = 0 the Range is at least 2^22 − 1 fill times, or 291 where it reaches
// the 2^63 ns the limiter counts. (Beyond that, New would say which window the
// limit needs.) Some layouts, with Burst = Limit:
//
//	Limit    Window   F   unit (token)   Range
//	1        24h      28  2^−28          64 days
//	1        1s       20  2^−20          48.5 days
//	5        1s       18  2^−18          38.8 days
//	3        7ms      15  2^−15          58 days
//	100      1m       16  2^−16          116.5 days
//	1000     1ms      5   2^−5           101.8 days
//	65536    1s       4   2^−4           48.5 days
//	65536    1ms      0   1              12.4 days
//	1048576  24h      8   2^−8           64 days
//	1048576  1s       0   1              48.5 days
//	1048576  1ms      0   1              69.9 minutes
//
// Wrap-around: timestamps are kept modulo 2^T, and a distance read from a
// stored timestamp is unambiguous only below Range. The limiter guarantees
// that no word is ever read across more than that: a key idle for its fill
// time is full, a full key equals a fresh one, and the limiter sweeps such keys
// away before their timestamps could wrap: every Range/4 in the background,
// started by the first request that notices, and before reading any word
// when the clock jumps by about 3/4 of Range or more at once (the process
// was suspended, or a test moved its clock). This holds for any clock that never
// reads more than Range/4 (15 minutes or more) earlier than a reading already
// made; the argument is in guard.go. The limiter's time stops about 146 years
// after its epoch.
//
// Memory: a key costs its slot in the map's table (16 bytes, in a table from
// 3/8 to 3/4 full as keys come) and one node holding its 8-byte cell, a link
// and a copy of the key: 32 bytes for a key of up to 15 bytes, 48 for one of
// up to 31, 64 for one of up to 47. About 66 bytes in all for a 12-byte key
// (cd bench && go run ./cmd/memory -impl tokenbucket).
//
// # Refunds
//
// A Limiter is a hotlimit.Refunder: TakeReceipt is Take plus a receipt, and
// Refund gives the receipt's tokens back, less what the bucket refilled since
// the Take (which a bucket without the Take would have lost to its cap), and
// never above the burst: at the time of the Take it restores the bucket
// exactly, a fill time later it gives nothing. Refund is one more writer of
// the state word, by compare-and-swap like the others (refund.go). A refund
// that fills the bucket evicts the key instead (a full bucket equals no
// bucket): the key's next request allocates its node again.
//
// # Compared with x/time/rate
//
// A rate.Limiter of rate r per second and burst b, one per key, is New(limit,
// window, hotlimit.WithBurst(b)) with limit/window = r: rate.NewLimiter(2.5,
// 10) is New(5, 2*time.Second, hotlimit.WithBurst(10)), rate.Every(d) a limit
// of 1 per d for d within Window's range, 1 ms to 24 h (rate.Every(100 *
// time.Microsecond) is New(10, time.Millisecond); no rate below one per 24 h
// has a counterpart). On the same clock (WithClock stands for AllowN's time) the two
// decide alike, call for call, but where the exact count is within a hair of
// the request: the bucket may pass a request short by less than a unit (see
// Arithmetic), and rate passes one short by less than r × 1 ns, whose wait it
// rounds down to none. Those margins aside, Remaining is rate's ⌊Tokens⌋, a
// denial's RetryAfter the delay of ReserveN(t, n) and ResetAfter that of
// ReserveN(t, b), up to 1 ns longer or a unit's refill shorter, without
// reserving anything.
// More than the burst never passes on either; n < 0, which rate passes and
// counts as tokens given back, is denied with RetryAfter hotlimit.Never.
// hotlimit.WaitN is rate's WaitN without the reservation (its documentation
// lists the differences). The bench module's TestTokenBucketDecidesAsXTimeRate
// compares the two on random sequences and holds every difference to these
// margins.
//
// # Eviction
//
// Sweep evicts every key whose bucket is full at the clock's current time: a
// new key starts full, so with a clock that never goes back, evicting it
// changes no decision. (A clock that later steps back behind the sweep finds
// the key fresh, where the kept key would have refilled from its last
// request.) Sweep swaps a tombstone into a full key's word by
// compare-and-swap, so it never races a concurrent request into a lost or
// duplicated admission. WithAutoSweep makes insertions sweep by themselves.
//
// A Limiter is safe for concurrent use by any number of goroutines; Allow and
// Take on an existing key take no lock and allocate nothing.
package tokenbucket
