package service

import (
	"slices"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// combine returns the limiter of a rule whose limits are enforced by
// children, one per limit, each shared with every other rule naming its
// Config and keyed by the same pair key: the single child itself for one
// limit, so that one-limit rules keep the plain limiter's fast path, and a
// [composite.Limiter] over them for several, which admits a request only when
// every child does and refunds the children that admitted it when one denies
// it. The composite holds no state of its own, so building a new one over the
// same children loses nothing.
//
// The composite asks sliding logs last, the others in the rule's order. The
// last child asked is never refunded (when it denies, only those before it
// took), and a sliding log is the one limiter whose refund may hold future
// capacity longer than the refunded request would have (it expires its oldest
// entry, not the refunded one; see slidinglog.Limiter.Refund). So a rule like
// "10/s token bucket and 100/min sliding log" is exact whatever its order.
func combine(children []hotlimit.Limiter) (hotlimit.Limiter, error) {
	if len(children) == 1 {
		return children[0], nil
	}
	children = slices.Clone(children)
	slices.SortStableFunc(children, func(a, b hotlimit.Limiter) int {
		return isLog(a) - isLog(b)
	})
	return composite.New(children...)
}

// isLog is 1 for a sliding log, in memory or built by a factory whose
// limiters report their Config (as redislimit's do), else 0.
func isLog(l hotlimit.Limiter) int {
	switch l := l.(type) {
	case *slidinglog.Limiter:
		return 1
	case interface{ Config() hotlimit.Config }:
		if l.Config().Algorithm == hotlimit.SlidingLog {
			return 1
		}
	}
	return 0
}
