// Package composite combines limiters into one: a request passes only if
// every child admits it, as with a policy of "10 per second and 1000 per
// day". Build it with New from children that can give back what they took
// (hotlimit.Refunder: every limiter of this module is one).
//
// # Model
//
// Take(key, n) takes n from each child in order (but for the children that
// can be asked together, see Batches). When every child admits,
// the request passes and stays counted in all. When one denies, the children
// that admitted before it are refunded at once, with their own receipts, and
// the request is denied: nothing is lost on a partial failure. Nor when a
// child panics in its Take (its clock, a limiter of the caller's own): the
// children that admitted before it are refunded so on the way out, and the
// panic goes on with its own value. A refund that panics (on a denial, or
// on such a way out) keeps what that child took, but not what the children
// before it did: they are refunded all the same. (A child after
// the denier may then be asked for the request too, to learn how long it
// must wait, see Decisions: it takes nothing when it denies, and is refunded
// at once when it admits; slidinglog's is asked without a Take, and takes
// nothing.) A refund at the clock reading of its Take restores a token
// bucket, a GCRA, a fixed window and a sliding counter exactly, and a
// sliding log's current capacity exactly (see slidinglog.Limiter.Refund for
// its future capacity: put sliding logs last, as the last child is never
// refunded on a denial, and slidinglog's after the denier is never asked
// for a Take).
// With a clock that moves
// between the Take and the refund, a token bucket or a GCRA also loses what
// it refilled in that instant, nanoseconds: a refund never counts a refill
// twice.
//
// Concurrent requests may see a child's capacity held for the instant
// between a Take and its refund: a request racing a partial failure may be
// denied where a later one would pass, never the reverse. No child ever
// admits more than its own policy, whatever the interleaving, since each
// child decides on its own state with its own lock-free protocol, and a
// refund never creates capacity that was not taken.
//
// # Batches
//
// The children that the first hotlimit.Batcher among them (a redislimit
// Limiter) sends in one round trip with its own (see
// hotlimit.Batcher.Batches: redislimit's on its client, without a lease),
// when two or more of them are not sliding logs, are asked together, in
// one go, when Take reaches the first of them, rather than in a round trip
// each; the others, a leased one say, are asked in their place. The
// decisions are those of the children asked in order: a child before the
// first of them that denies leaves them untaken, and a denial by any child
// after it (one of them, or another between them) has each of them that
// took the request give it back with its own receipt, those after the
// denier too, as the children before the denier do. Either way, after a
// denial they give back and report their state together, in one more go
// (see hotlimit.BatchTake.GiveBack). A panic has them give the request
// back too. Sliding logs stay out of the
// batch, asked in their place on their own: a denial by a child before one
// never refunds it. While Redis cannot decide the children of the batch,
// only the first, whose turn it is, is decided by its failure policy
// there; the others are asked ahead of their turn
// (hotlimit.BatchTake.Ahead), and each is asked again in its place, so
// that a redislimit child with FailLocal counts in its in-process limiter
// (where no receipt reaches) only what it counts asked in order.
//
// # Decisions
//
// The Decision is the most restrictive of the children's:
//
//   - Allowed: only if every child admitted.
//   - Limit and Remaining: those of the child with the least Remaining
//     (when denied, every child as it is after the refunds); the first such
//     child on a tie.
//   - RetryAfter: 0 when allowed; when denied, how long until every child
//     admits the request: the largest of the denying child's RetryAfter
//     and those of the children after it that would deny it too. Those
//     are asked for their state (Take(key, 0)) after the give-back, and
//     each one whose Remaining is below n is then asked for the n
//     requests: a denial takes nothing and gives its RetryAfter; a child
//     that admits them (its state changed since its report, under
//     concurrent requests) gives them back at once with its own receipt,
//     as the children before the denier do, and waits nothing. Each child
//     admits more as time passes without other requests, so the request
//     passes RetryAfter later, if nothing else is taken meanwhile, and not
//     a nanosecond sooner: under 1 per second and 1 per minute, the second
//     request, half a second after the first, waits 59.5 s, not the
//     second's 0.5 s after which the minute would deny it again. A sliding
//     log of slidinglog's (a *slidinglog.Limiter itself: a limiter of
//     another type with a RetryAfter method, one that embeds it included,
//     is asked as any other child) is not asked by a Take (its Take of several
//     requests can be denied with some of them counted under concurrent
//     requests, see hotlimit.Limiter, and one given back holds future
//     capacity, see slidinglog.Limiter.Refund): it tells its wait by
//     slidinglog.Limiter.RetryAfter, which counts nothing, and a composite
//     holding a sliding log is asked child by child, as here. Not asked
//     for n, and so left out of the wait: any other sliding log (one that
//     reports its Config as one, as redislimit's do) when n > 1 (for one
//     request it is asked by a Take); a child whose report failed (its
//     error is beside the decision); and, once the caller's context has ended, a
//     child that would decide with it (see UsesContext), which could only
//     fail: a composite of in-memory limiters is still asked, as its
//     children would be side by side. After RetryAfter one of those may
//     still deny the request: a waiting caller (see hotlimit.Wait) simply
//     waits again. A request of more than some child's burst (see
//     hotlimit.Burster: every limiter of this module says its own) is
//     denied with hotlimit.Never, every child reporting its state, none
//     asked for n: no wait lets it pass, whichever child would deny it
//     first.
//   - ResetAfter: the largest of the children's.
//
// Take(key, 0) and Take(key, n < 0) report: every child is asked, none is
// changed.
//
// # Receipts
//
// A composite is itself a hotlimit.Refunder. Its receipt holds n and the
// earliest of its children's receipt times (but those of the children that
// keep no state: an unlimited child, or a composite of them, keeps nothing
// and gives no reading of the clock), and Refund gives that receipt to every
// child. When a child that keeps state admitted without counting (its zero
// Receipt, as redislimit's while Redis is down), the composite gives the
// zero Receipt, whose refund is a no-op: no time could keep that child from
// being given back what it did not count (a limiter counts a time before its
// epoch as its epoch, and a clock may read 0, or less), so the others keep
// the request too, which gives back less, never more. Giving the earliest
// time is safe for every kind of child: each limiter's refund is monotone in
// the receipt's time (an earlier time never gives back more), and
// the earliest time is at or before each child's own. It gives back less than
// each child's own receipt would where the times differ: a token bucket or a
// GCRA counts its refill from the earlier time, a fixed window or a sliding
// counter finds the earlier window ended sooner. Children should read the
// same clock; with different clocks a refund may give back less still, never
// more: a redislimit child, on Redis's clock, far ahead of the in-memory
// limiters' process clock, gets nothing back from a composite that also has
// in-memory children (a service.Service rule of several limits keeps each
// limit's own receipt instead).
//
// A composite nested in another is not asked for its receipt when the other
// gives back on a denial, or when the request ended: each of its children
// is given back with its own receipt, as the same children side by side in
// one composite are, so that a request the other denies counts in none of
// them, even when one of them counted nothing (and the nested composite's
// receipt is the zero Receipt), or their clocks read far apart.
//
// # Contexts
//
// A composite is a hotlimit.ContextTaker and a hotlimit.ContextRefunder:
// TakeContext, TakeReceiptContext and RefundContext ask the children that
// take a context (redislimit's limiters, a composite of them) under the
// caller's, so that its deadline bounds their round trips, and join their
// errors; hotlimit.WaitN calls them so, as does a service.Service rule whose
// limiter is a composite. A denial's give-back runs without the context's
// cancellation, so that a request being cancelled still gives back what it
// took, and a request that ended while a child could not decide (its failure
// policy passed it) is given back by every child. Allow, Take, TakeReceipt
// and Refund ask every child without a context.
//
// The error joins every child's, but a denial by a child that decided is a
// quota spent even when another child failed beside it (its failure policy
// passed, or it failed to report its state or to give back): DecidingError
// keeps only the errors of the children whose failure made the decision, as
// a service.Service does for each limit of a rule (service.LimitDecision.Err).
//
// A Limiter is safe for concurrent use; on keys its children already hold,
// Allow, Take, TakeReceipt and Refund allocate nothing (but for the visits a
// child's Refund makes now and then, with hotlimit.WithAutoSweep or
// hotlimit.WithMaxKeys, when it returns a key to a fresh key's state: see
// hotlimit.Refunder; and but for a composite that holds composites of more
// than MaxChildren limiters in all, whose Take allocates the receipts it
// keeps of each; and but for a Take that asks children together, see
// Batches, which allocates their takes).
package composite
