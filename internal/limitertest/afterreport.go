package limitertest

import (
	"context"

	"github.com/hotlimit/hotlimit"
)

// AfterReport is a Refunder that runs Hook once, after its first report
// (a Take of 0) returns, and counts the Takes of n ≥ 1 it admitted and the
// refunds it got: a test of a limiter of several limits uses it to change a
// later limit's state between its report and a Take that follows.
type AfterReport struct {
	hotlimit.Refunder
	// Hook runs after the next report, then is cleared.
	Hook func()
	// Admitted counts the Takes of n ≥ 1 admitted, Refunds the refunds.
	Admitted, Refunds int
}

// Take is TakeReceipt without the receipt.
func (a *AfterReport) Take(key string, n int) hotlimit.Decision {
	d, _ := a.TakeReceipt(key, n)
	return d
}

// TakeReceipt asks the Refunder, then runs Hook after a report.
func (a *AfterReport) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d, r := a.Refunder.TakeReceipt(key, n)
	if n == 0 && a.Hook != nil {
		h := a.Hook
		a.Hook = nil
		h()
	}
	if n >= 1 && d.Allowed {
		a.Admitted++
	}
	return d, r
}

// Refund counts the refund and passes it on.
func (a *AfterReport) Refund(key string, r hotlimit.Receipt) {
	a.Refunds++
	a.Refunder.Refund(key, r)
}

// ContextAfterReport is an AfterReport that takes a context (a
// hotlimit.ContextRefunder that never fails), so that a limiter of several
// limits asks it through TakeReceiptContext and gives back through
// RefundContext.
type ContextAfterReport struct{ *AfterReport }

// TakeReceiptContext is TakeReceipt; ctx is not read.
func (c ContextAfterReport) TakeReceiptContext(_ context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r := c.TakeReceipt(key, n)
	return d, r, nil
}

// RefundContext is Refund; ctx is not read.
func (c ContextAfterReport) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	c.Refund(key, r)
	return nil
}
