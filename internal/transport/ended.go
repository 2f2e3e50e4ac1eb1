package transport

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/ctxend"
)

// EndedBy returns ctx's error when ctx has ended and err, the error of a
// decision under ctx, wraps that error, context.Canceled or
// context.DeadlineExceeded; nil otherwise. Such a decision ended with the
// request: a limiter that could not decide answered its failure policy's
// decision, and a rule of several limits gave back what the others took
// (see service.Service.TakeContext), so the request is answered without
// being served. The error, not the context alone, says so: the context may
// have ended only after the decision, when the request was counted. Nor
// does any context error in err: a limiter's own timeout (redislimit's
// WithTimeout) wraps context.DeadlineExceeded, under a request that goes on
// or that its client cancelled after the decision. (A request whose own
// deadline passes just after a limiter's own timeout is still taken for
// ended: the two errors are the same.) A ctx past its deadline has ended
// though its timer has not run yet, as the service reads it (a backend that
// sets the deadline on its socket can fail at it first, and the service
// then gives the request back): its error is context.DeadlineExceeded. So is
// that of a ctx cancelled since, its timer still not run, whose Err now
// reads context.Canceled, when err wraps context.DeadlineExceeded: the
// service may have read ctx between the deadline and the cancellation.
func EndedBy(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	cerr := ctxend.Err(ctx)
	switch {
	case cerr == nil:
		return nil
	case errors.Is(err, cerr):
		return cerr
	case cerr != context.DeadlineExceeded && errors.Is(err, context.DeadlineExceeded) && pastDeadline(ctx):
		// Cancelled after its deadline passed, before its timer ran: the
		// service, which read ctx in between, may have read the deadline.
		return context.DeadlineExceeded
	}
	return nil
}

// pastDeadline reports whether ctx has a deadline that has passed.
func pastDeadline(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
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
