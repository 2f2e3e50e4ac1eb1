package limitertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
)

// ErrUnreachable is the error of every call of an [UnreachableRefunder]
// that takes a context.
var ErrUnreachable = errors.New("backend unreachable")

// UnreachableRefunder is a limit on a backend that cannot be reached: every
// call that takes a context, a report (n ≤ 0) and a refund too, fails with
// ErrUnreachable, and its failure policy decides: it passes, counting
// nothing, or, Closed, denies with Limit 5, RetryAfter 1s. Asked without a
// context it passes and counts nothing.
type UnreachableRefunder struct{ Closed bool }

func (u *UnreachableRefunder) decision() hotlimit.Decision {
	if u.Closed {
		return hotlimit.Decision{Limit: 5, RetryAfter: time.Second}
	}
	return hotlimit.Decision{Allowed: true, Limit: 5}
}

// Allow passes.
func (u *UnreachableRefunder) Allow(string) bool { return true }

// Take passes and counts nothing.
func (u *UnreachableRefunder) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true, Limit: 5}
}

// TakeReceipt passes and takes nothing.
func (u *UnreachableRefunder) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return u.Take(key, n), hotlimit.Receipt{}
}

// Refund gives back nothing: nothing was taken.
func (u *UnreachableRefunder) Refund(string, hotlimit.Receipt) {}

// TakeContext answers its failure policy's decision with ErrUnreachable.
func (u *UnreachableRefunder) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return u.decision(), ErrUnreachable
}

// TakeReceiptContext answers its failure policy's decision, the zero
// Receipt and ErrUnreachable.
func (u *UnreachableRefunder) TakeReceiptContext(context.Context, string, int) (hotlimit.Decision, hotlimit.Receipt, error) {
	return u.decision(), hotlimit.Receipt{}, ErrUnreachable
}

// RefundContext fails with ErrUnreachable.
func (u *UnreachableRefunder) RefundContext(context.Context, string, hotlimit.Receipt) error {
	return ErrUnreachable
}

// TimingOutLimiter is a limit on a backend slower than the limiter's own
// timeout, under a caller's context that lasts: every call that takes a
// context fails with an error wrapping context.DeadlineExceeded (the
// limiter's deadline, not the caller's), and its failure policy decides: it
// passes, counting nothing, or, Closed, denies with Limit 5, RetryAfter 1s.
// Asked without a context it passes.
type TimingOutLimiter struct{ Closed bool }

// ErrOwnTimeout is the error of every call of a [TimingOutLimiter] that
// takes a context: it wraps context.DeadlineExceeded.
var ErrOwnTimeout = fmt.Errorf("backend slower than the limiter's timeout: %w", context.DeadlineExceeded)

// Allow passes.
func (l *TimingOutLimiter) Allow(string) bool { return true }

// Take passes.
func (l *TimingOutLimiter) Take(string, int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: true, Limit: 5}
}

// TakeContext answers its failure policy's decision with ErrOwnTimeout.
func (l *TimingOutLimiter) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return (&UnreachableRefunder{Closed: l.Closed}).decision(), ErrOwnTimeout
}
