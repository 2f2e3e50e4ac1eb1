package hotlimit

import (
	"context"
	"errors"
)

// ContextTaker is a [Limiter] whose decisions may wait on something outside
// the process, such as Redis, and so take a context: its deadline bounds the
// wait, and its cancellation ends it. redislimit's Limiter is one.
// service.Service.TakeContext passes its context to the limiters that are.
type ContextTaker interface {
	Limiter
	// TakeContext is Take under ctx. When the decision could not be made
	// (ctx done, the backend failing), it returns why, together with the
	// decision the limiter made instead (its failure policy's).
	TakeContext(ctx context.Context, key string, n int) (Decision, error)
}

// ContextRefunder is a [Refunder] whose takes and refunds take a context, as
// [ContextTaker]'s do: what a service rule of several limits uses to pass its
// context to each. redislimit's Limiter is one.
type ContextRefunder interface {
	Refunder
	// TakeReceiptContext is TakeReceipt under ctx, with the error, if any,
	// as in [ContextTaker.TakeContext].
	TakeReceiptContext(ctx context.Context, key string, n int) (Decision, Receipt, error)
	// RefundContext is Refund under ctx, with the error, if any.
	RefundContext(ctx context.Context, key string, r Receipt) error
}

// Batcher is a [ContextRefunder] that decides several takes together, its
// own and other limiters', in fewer round trips than one each:
// redislimit's Limiter sends the takes of the limiters that share its
// Redis client in one round trip. A service rule of several limits and a
// composite.Limiter ask together the limiters that their first Batcher
// sends in one round trip (see Batches, and service.Service.Take), when a
// take reaches the first of them: the others are asked ahead of their
// turn (see BatchTake.Ahead).
type Batcher interface {
	ContextRefunder
	// TakeBatch decides every take of takes, under ctx, as its Limiter's
	// TakeReceiptContext would, each independently of the others: it sets
	// each take's Decision, Receipt and Err, and no take's outcome depends
	// on another's. A take whose Limiter the batcher cannot send with the
	// others is decided by that Limiter's own TakeReceiptContext, and one
	// without a Limiter gets an error wrapping [ErrInvalidConfig]. The
	// batcher need not be among the takes' Limiters. Each take's GiveBack
	// is given back first (see BatchTake). Should TakeBatch panic, it
	// gives back what the takes it decided took, and each GiveBack it had
	// not given back yet, before the panic goes on: its caller holds none
	// of those receipts.
	TakeBatch(ctx context.Context, takes []BatchTake)
	// Batches reports whether TakeBatch sends a take of l with the
	// batcher's own in one round trip, rather than deciding it by itself
	// (by l's TakeReceiptContext, or a round trip of its own): a caller
	// asks ahead of their turn only the limiters that share the trip, as
	// asking any other early saves nothing.
	Batches(l ContextRefunder) bool
}

// BatchTake is one take of [Batcher.TakeBatch]: N requests from Key under
// Limiter, and what Limiter's TakeReceiptContext returned for them.
type BatchTake struct {
	Limiter ContextRefunder
	Key     string
	N       int
	// Ahead says that the take is asked ahead of its turn, to be given
	// back when another limit denies the request: when its limiter cannot
	// decide it (its backend failing), the batcher does not decide it by
	// the limiter's failure policy, which may count it where no receipt
	// reaches (redislimit's FailLocal, in its in-process limiter). Its Err
	// then wraps [ErrNotDecided], its Decision and Receipt are zero, and
	// the caller asks the limiter again in the take's turn.
	Ahead bool
	// GiveBack, when its N is 1 or more, is a receipt of Limiter's for
	// Key that TakeBatch gives back before it decides the take, as
	// Limiter's RefundContext under ctx without its cancellation would:
	// in the same round trip when the batcher sends the take with others,
	// so that the give-backs of a denied request and the reports (N = 0)
	// that follow them cost one. The takes sent with a give-back may
	// then outlast ctx's cancellation too (redislimit's are bounded by
	// their limiters' timeouts). The give-back's error is GiveBackErr;
	// after one, as after RefundContext's, the receipt is not to be given
	// back again.
	GiveBack Receipt

	// Decision, Receipt, Err and GiveBackErr are set by TakeBatch.
	Decision    Decision
	Receipt     Receipt
	Err         error
	GiveBackErr error
}

// ErrNotDecided is wrapped by the error of a [BatchTake] asked Ahead that
// its limiter could not decide, and left for the caller to ask in turn.
var ErrNotDecided = errors.New("not decided ahead of its turn")
