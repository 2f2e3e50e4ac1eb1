package hotlimit

// Receipt records what a Take took: N requests, counted at time At of the
// limiter's clock. A denied Take, and a Take of n ≤ 0, take nothing and give
// the zero Receipt, whose refund is a no-op.
//
// At is in nanoseconds of the clock the limiter reads (see [WithClock]): the
// clock reading of the call, or, for a fixed window or sliding counter whose
// clock read behind the key's window, the start of the later window the
// requests counted in, and for a sliding log the time its first request was
// logged at (later than the reading when the key's newest logged time was),
// and for a token bucket whose call read the clock long before a sweep it
// met (a caller stalled for more than a quarter of the range its state
// word holds), the later time the sweep counts it at. A composite's
// receipt holds the earliest At of its children's.
//
// A Receipt is a plain value: it allocates nothing, and may be kept, copied
// and compared freely.
type Receipt struct {
	// N is how many requests the Take counted; 0 when it counted none.
	N int
	// At is when they were counted, in nanoseconds of the limiter's clock.
	At int64
}

// Refunder is a [Limiter] that can give back what a Take took: a request
// that was admitted and then not served (a downstream call failed, a
// composite's other limit denied it) need not count against the key.
//
// The contract of Refund, which every implementation keeps, is that it never
// creates capacity that was not taken: after Refund(key, r) the key admits at
// most what it would have admitted had the Take that gave r never been made,
// with a clock that never goes back (as a production [Clock] never does).
// After a step back behind the key's latest request the comparison no longer
// holds: a key reads such a step as no time passing since that request (the
// window it counted in stays current, the tokens it left stay), while the
// key without the Take may hold no request that late and reads the earlier
// time as it comes; so a refund may then give back more than the Take still
// takes (a gcra refund also counts less time as elapsed since At than the
// key has seen), though never beyond a new key's full quota.
//
// When the Take still counts in full, the refund gives all of it back; as the
// requests age out of the algorithm's memory it gives back less, and nothing
// once they no longer count:
//
//   - tokenbucket, gcra: the N tokens, less what has refilled since At
//     (refills after At would have been capped at the burst had the Take
//     not been made), and never above the burst: at the time of the Take,
//     all of them.
//   - fixedwindow: N off the count while the window of At is current;
//     nothing after it ended.
//   - slidingcounter: N off the count of At's window while it is the
//     current or the previous one.
//   - slidinglog: while At is in the window, up to N of the oldest logged
//     requests still in the window are expired: the current capacity comes
//     back exactly, the future one no later than the Take's absence would
//     have brought it.
//
// Every implementation is monotone in At: a receipt with an earlier At never
// gives back more. That is what lets a composite refund its children with
// the earliest of their times.
//
// A receipt must come from the same limiter's TakeReceipt for the same key,
// and be refunded at most once. Refunding a receipt twice, or one that was
// made up, may give back capacity that was not taken (never beyond a new
// key's full quota), but never corrupts the key's state and never panics.
// Refund never inserts a key, and allocates nothing, but for the visits
// that an in-memory limiter with WithAutoSweep or WithMaxKeys makes now and
// then, when a refund returns a key to a fresh key's state, to free the
// memory the key leaves (a few bytes each).
type Refunder interface {
	Limiter
	// TakeReceipt is Take, plus the receipt of what it took: the zero
	// Receipt when it was denied or n ≤ 0.
	TakeReceipt(key string, n int) (Decision, Receipt)
	// Refund gives back what r took from key, as far as it still counts;
	// see Refunder. The zero Receipt, and any with N ≤ 0, give back nothing.
	Refund(key string, r Receipt)
}
