// Package ctxend tells whether a caller's context has ended, counting a
// deadline that has passed before the context's own timer has marked it.
//
// A limiter on a backend (redislimit, with a client that sets the caller's
// deadline on its socket) can fail at the deadline a little before the
// context's timer runs: ctx.Err() then still reads nil, and the failure
// would read as the backend's, where it is the caller's own.
package ctxend

import (
	"context"
	"time"
)

// Err is ctx.Err(), or context.DeadlineExceeded when ctx's deadline has
// passed while its Err still reads nil; nil while ctx goes on. A nil ctx
// has not ended.
func Err(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
