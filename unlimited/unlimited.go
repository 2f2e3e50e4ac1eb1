// Package unlimited is the limiter of [hotlimit.Unlimited]: it passes every
// request and keeps no state, so that given users, APIs or pairs of a
// service's rules are exempt from limiting (an allow-list) at the cost of a
// method call.
package unlimited

import (
	"fmt"
	"math"

	"github.com/hotlimit/hotlimit"
)

// Limiter passes every request. It has no state: the zero value is ready to
// use, and so is a nil *Limiter, and it is safe for concurrent use.
type Limiter struct{}

// New returns an unlimited limiter. It accepts the options every constructor
// accepts and uses none of them, except that it rejects a burst: wrapping
// hotlimit.ErrInvalidConfig, as Unlimited takes none.
func New(opts ...hotlimit.Option) (*Limiter, error) {
	if b := hotlimit.NewOptions(opts...).Burst; b != 0 {
		return nil, fmt.Errorf("unlimited: burst %d: Unlimited takes no burst: %w", b, hotlimit.ErrInvalidConfig)
	}
	return &Limiter{}, nil
}

// passed is the Decision of every request that passes: nothing limits it.
var passed = hotlimit.Decision{Allowed: true, Limit: math.MaxInt, Remaining: math.MaxInt}

// Allow reports true.
func (*Limiter) Allow(string) bool { return true }

// Take passes n requests, any n >= 0, with Limit and Remaining math.MaxInt;
// n < 0 is a caller's bug and is denied with RetryAfter hotlimit.Never, as
// by every limiter.
func (*Limiter) Take(_ string, n int) hotlimit.Decision {
	if n < 0 {
		return hotlimit.Decision{Limit: math.MaxInt, Remaining: math.MaxInt, RetryAfter: hotlimit.Never}
	}
	return passed
}

// TakeReceipt is Take, with the zero Receipt: nothing is counted, so there
// is nothing to give back.
func (l *Limiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	return l.Take(key, n), hotlimit.Receipt{}
}

// Refund does nothing.
func (*Limiter) Refund(string, hotlimit.Receipt) {}

// Burst returns math.MaxInt: any count at once passes; see
// hotlimit.Burster.
func (*Limiter) Burst() int { return math.MaxInt }

// Len returns 0: no key is held.
func (*Limiter) Len() int { return 0 }

// Sweep returns 0: there is nothing to evict.
func (*Limiter) Sweep() int { return 0 }

var _ hotlimit.Refunder = (*Limiter)(nil)
