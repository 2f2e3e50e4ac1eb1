package limitertest

import (
	"context"
	"fmt"

	"github.com/hotlimit/hotlimit"
)

// Batching is a [hotlimit.Batcher] over an in-memory limiter, as
// redislimit's limiters are over Redis: every Batching sends its takes
// with every other's. TakeBatch gives back each take's GiveBack, calls
// Before (when set), then decides each take by its Limiter, and appends
// a description of the call to Log (see Described), which the
// Batchings of a test share. A panic of Before leaves every GiveBack given
// back and nothing taken, as TakeBatch's contract asks of a batcher that
// panics.
type Batching struct {
	hotlimit.Refunder
	// Conf is what Config reports: a sliding log's keeps a Batching out of
	// the batches of a service rule or a composite.
	Conf   hotlimit.Config
	Log    *[]string
	Before func()
}

var _ hotlimit.Batcher = (*Batching)(nil)

// Config returns b.Conf.
func (b *Batching) Config() hotlimit.Config { return b.Conf }

// TakeReceiptContext is TakeReceipt: it never fails.
func (b *Batching) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r := b.TakeReceipt(key, n)
	return d, r, nil
}

// RefundContext is Refund: it never fails.
func (b *Batching) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	b.Refund(key, r)
	return nil
}

// TakeBatch decides takes as the type's documentation says.
func (b *Batching) TakeBatch(ctx context.Context, takes []hotlimit.BatchTake) {
	*b.Log = append(*b.Log, Described(takes))
	for i := range takes {
		t := &takes[i]
		t.GiveBackErr = t.Limiter.RefundContext(context.WithoutCancel(ctx), t.Key, t.GiveBack)
	}
	if b.Before != nil {
		b.Before()
	}
	for i := range takes {
		t := &takes[i]
		t.Decision, t.Receipt, t.Err = t.Limiter.TakeReceiptContext(ctx, t.Key, t.N)
	}
}

// Batches reports whether l is a Batching.
func (b *Batching) Batches(l hotlimit.ContextRefunder) bool {
	_, ok := l.(*Batching)
	return ok
}

// Described describes a call of TakeBatch: "take 2" for two takes of
// requests, "report 2, 1 given back" for two reports (n = 0), one of them
// after a give-back.
func Described(takes []hotlimit.BatchTake) string {
	kind, back := "report", 0
	for _, t := range takes {
		if t.N > 0 {
			kind = "take"
		}
		if t.GiveBack.N > 0 {
			back++
		}
	}
	s := fmt.Sprintf("%s %d", kind, len(takes))
	if back > 0 {
		s += fmt.Sprintf(", %d given back", back)
	}
	return s
}
