package hotlimit

import "context"

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
