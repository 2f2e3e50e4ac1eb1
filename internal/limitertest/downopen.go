package limitertest

import (
	"context"

	"github.com/hotlimit/hotlimit"
)

// DownOpen is a limiter that takes a context, whose backend is down and
// whose failure policy admits every request (the zero Receipt, Remaining
// 0), as redislimit's FailOpen does: with a context it says so with Err,
// without one it cannot. Asked counts the times it is asked, each a round
// trip that fails.
type DownOpen struct {
	Err   error
	Asked int
}

// Allow is Take(key, 1).Allowed.
func (d *DownOpen) Allow(key string) bool { return d.Take(key, 1).Allowed }

// Take is TakeReceiptContext without its receipt and error.
func (d *DownOpen) Take(key string, n int) hotlimit.Decision {
	dd, _ := d.TakeReceipt(key, n)
	return dd
}

// TakeReceipt is TakeReceiptContext without its error.
func (d *DownOpen) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	dd, r, _ := d.TakeReceiptContext(context.Background(), key, n)
	return dd, r
}

// TakeContext is TakeReceiptContext without its receipt.
func (d *DownOpen) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	dd, _, err := d.TakeReceiptContext(ctx, key, n)
	return dd, err
}

// TakeReceiptContext counts the call and admits, with the zero Receipt and
// Err.
func (d *DownOpen) TakeReceiptContext(context.Context, string, int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d.Asked++
	return hotlimit.Decision{Allowed: true, Limit: 1}, hotlimit.Receipt{}, d.Err
}

// Refund does nothing: nothing was counted.
func (*DownOpen) Refund(string, hotlimit.Receipt) {}

// RefundContext does nothing: nothing was counted.
func (*DownOpen) RefundContext(context.Context, string, hotlimit.Receipt) error { return nil }
