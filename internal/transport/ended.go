package transport

import (
	"context"
	"errors"
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
