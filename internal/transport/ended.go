package transport

import (
	"context"
	"errors"
	"math"

	"github.com/hotlimit/hotlimit"
)

// Ended returns the context error that err wraps, context.Canceled or
// context.DeadlineExceeded, or nil. A decision under a request's context
// whose error wraps it ended with the request: a limiter that could not
// decide answered its failure policy's decision, and a rule of several
// limits gave back what the others took (see service.Service.TakeContext),
// so the request is answered without being served. The error, not the
// context, says so: the context may have ended only after the decision,
// when the request was counted. The context must have ended too: a
// limiter's own timeout (redislimit's WithTimeout) also wraps
// context.DeadlineExceeded, under a request that goes on.
func Ended(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// EndedBy returns ctx's error when ctx has ended and err wraps that
// error, and nil otherwise: a decision under ctx that ended with it (see
// [Ended]). A limiter's own timeout wraps context.DeadlineExceeded, which a
// request's context that its client cancelled after the decision does not
// match: that request was decided, and counted, while it lasted.
func EndedBy(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
		return cerr
	}
	return nil
}

// EndedDecision is the Decision an observer sees for a request that ended
// before a limiter decided for it under c: nothing allowed, nothing
// remaining, and the Limit a decision of c reports, math.MaxInt for
// [hotlimit.Unlimited] (whose Config has no Limit), so that an observer
// keyed on it sees one value per rule whether or not the client left.
func EndedDecision(c hotlimit.Config) hotlimit.Decision {
	if c.Algorithm == hotlimit.Unlimited {
		return hotlimit.Decision{Limit: math.MaxInt}
	}
	return hotlimit.Decision{Limit: c.Limit}
}
