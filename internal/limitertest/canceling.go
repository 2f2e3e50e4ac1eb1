package limitertest

import (
	"context"
	"time"

	"github.com/hotlimit/hotlimit"
)

// CancelingLimiter is a limiter on a backend that cannot decide, whose
// failure policy passes, asked while the caller leaves: TakeContext calls
// Cancel (the caller's context's) before it answers, with a pass and the
// context's error. It is how the gateways' tests make a request end during
// its decision.
type CancelingLimiter struct{ Cancel context.CancelFunc }

// Allow passes.
func (l *CancelingLimiter) Allow(string) bool { return true }

// Take passes: asked without a context, the backend answers.
func (l *CancelingLimiter) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true, Limit: 1}
}

// TakeContext cancels the caller's context and passes, as a failure policy
// that fails open does, with the context's error.
func (l *CancelingLimiter) TakeContext(ctx context.Context, _ string, _ int) (hotlimit.Decision, error) {
	l.Cancel()
	return hotlimit.Decision{Allowed: true, Limit: 1}, ctx.Err()
}

// OperatorRules are service.Rules, as JSON, for the metrics modules' tests
// of what an operator sees: a default of one limit, an allow-listed user, a
// rule of two limits and a rule with a limit in shadow mode.
const OperatorRules = `{
  "default": [{"algorithm": "TokenBucket", "limit": 5, "window": "1s"}],
  "users":   {"partner": [{"algorithm": "Unlimited"}]},
  "apis": {
    "GET /pay": [{"algorithm": "TokenBucket", "limit": 10, "window": "1s", "burst": 20},
                 {"algorithm": "FixedWindow", "limit": 100, "window": "1m", "scope": "api"}],
    "GET /new": [{"algorithm": "FixedWindow", "limit": 10, "window": "1m"},
                 {"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]
  }
}`

// CancelingRefunder is a [CancelingLimiter] that a service rule of several
// limits can hold (a hotlimit.ContextRefunder): TakeReceiptContext cancels
// the caller's context when Cancel is set, and passes with the context's
// error and the zero Receipt, as a failure policy that fails open counts
// nothing; without a context, or with Cancel nil, it passes and counts
// nothing either.
type CancelingRefunder struct {
	CancelingLimiter
	// Closed makes its failure policy deny, as one that fails closed
	// does: the decision Limit 5, RetryAfter 1s, nothing counted.
	Closed bool
}

// TakeReceipt passes and takes nothing.
func (l *CancelingRefunder) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return l.Take(key, n), hotlimit.Receipt{}
}

// Refund gives back nothing: nothing was taken.
func (l *CancelingRefunder) Refund(string, hotlimit.Receipt) {}

// TakeReceiptContext cancels the caller's context when Cancel is set, and
// passes with the context's error, or, Closed and the context ended,
// denies with it.
func (l *CancelingRefunder) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	if l.Cancel != nil {
		l.Cancel()
	}
	if l.Closed && ctx.Err() != nil {
		return hotlimit.Decision{Limit: 5, RetryAfter: time.Second}, hotlimit.Receipt{}, ctx.Err()
	}
	return hotlimit.Decision{Allowed: true, Limit: 1}, hotlimit.Receipt{}, ctx.Err()
}

// RefundContext gives back nothing, as Refund.
func (l *CancelingRefunder) RefundContext(context.Context, string, hotlimit.Receipt) error {
	return nil
}

// TakeContext is TakeReceiptContext without the receipt: a rule of one
// limit asks it so.
func (l *CancelingRefunder) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	d, _, err := l.TakeReceiptContext(ctx, key, n)
	return d, err
}

// OnBackend is the factory option of a service whose rules keep one limit
// on a backend: the limiter of the limit with onBackend's Limit is remote,
// every other one memory's (pass service.NewLimiter).
func OnBackend(onBackend hotlimit.Config, remote hotlimit.Limiter, memory hotlimit.Factory) hotlimit.Option {
	return hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == onBackend.Limit {
			return remote, nil
		}
		return memory(c, opts...)
	})
}

// PastDeadline returns parent with a deadline that has passed while its Err
// still reads parent's (nil for a parent that goes on): the instant between
// a deadline and the run of its timer, in which a backend that sets the
// deadline on its socket can already have failed at it.
func PastDeadline(parent context.Context) context.Context { return pastDeadline{parent} }

type pastDeadline struct{ context.Context }

// Deadline reports a deadline a millisecond ago.
func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
