package hotlimit

import (
	"math"
	"time"
)

// Never is the RetryAfter of a request that no amount of waiting lets pass:
// more than Limit at once (more than the burst, for a limiter with one), or a
// negative count. A limiter may also answer Never to a request within its
// burst whose wait would end past the last reading its clock can make
// (math.MaxInt64, or the end of the range it counts), or is longer than a
// Duration holds: each algorithm's package says when.
const Never = time.Duration(math.MaxInt64)

// Decision is the outcome of [Limiter.Take], and what a caller needs to answer
// its own client (for example with HTTP 429 and Retry-After).
type Decision struct {
	// Allowed reports whether the request passed; when it did, it was counted.
	Allowed bool
	// Limit is the policy's limit: requests per window.
	Limit int
	// Remaining is how many single requests would still pass right now, after
	// this one.
	Remaining int
	// RetryAfter is zero when allowed. When denied, the same request made
	// RetryAfter later passes if nothing else is taken meanwhile; Never when it
	// can never pass. Under several limits (a composite, or a service rule of
	// several) it is the least wait after which every limit admits the
	// request: the largest of the denying limit's and of those of the limits
	// after it that would deny it too (for a report, Take(key, 0), the
	// largest of those of the limits that deny), or Never when some limit
	// (not in shadow mode) can never pass the request. slidinglog's sliding
	// log tells its wait without counting anything; one on Redis, after the
	// denying limit, is not asked about a request of more than one, and may
	// still deny it RetryAfter later (see package composite).
	RetryAfter time.Duration
	// ResetAfter is how long until the key is back to its full quota if
	// nothing else is taken meanwhile; zero when it already is. A new key
	// that a key cap ([WithMaxKeys]) turns away has its RetryAfter: its
	// quota is whole once there is room for it, not before.
	ResetAfter time.Duration
}

// Limiter decides whether requests from a key may pass. Implementations are
// safe for concurrent use, and make each decision without locks.
type Limiter interface {
	// Allow reports whether one request from key passes, and counts it if so.
	// It is Take(key, 1).Allowed on the fastest path.
	Allow(key string) bool
	// Take asks for n requests from key at once: all pass or none does (but
	// for slidinglog's Take with n > 1 under concurrent requests or refunds
	// on the key, which can be denied with some of its requests counted, so
	// that the key admits less for one Window, never more). n == 0
	// reports the key's state without changing it, and is Allowed (with
	// RetryAfter zero) whatever the key holds: whether one request would
	// pass now is Remaining > 0 (but for a new key that a key cap,
	// [WithMaxKeys], turns away, and for decisions made without the key's
	// state: redislimit's FailOpen, while Redis cannot decide, reports
	// Remaining 0 and passes the request all the same, and so does a
	// composite with such a child). n greater than the limit (than the
	// burst, for a limiter with one, which may be above or below the limit)
	// never passes (RetryAfter is Never); n < 0 is denied with RetryAfter
	// Never.
	Take(key string, n int) Decision
}

// Burster is a [Limiter] that tells how many requests one Take can ever pass
// at once, as x/time/rate's Limiter.Burst does: a Take of more is denied
// with RetryAfter [Never]. Every limiter of this module is one. A composite
// reads its children's, so that it denies with Never a request one of them
// could never pass, even when another, asked first, denies it for a while.
type Burster interface {
	Limiter
	// Burst is the most requests one Take passes at once: the burst, or the
	// limit for a limiter without one (a bound, for a composite of
	// children of which some do not say theirs).
	Burst() int
}
