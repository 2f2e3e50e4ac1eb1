// Package givenclock tells whether options set a clock, which
// hotlimit.NewOptions cannot say, as it puts the monotonic clock where none
// is given: redislimit reads a given clock instead of Redis's TIME, and
// envoyrls makes a clock given to its limiters the server's own.
package givenclock

import "github.com/hotlimit/hotlimit"

// Of returns the clock opts set (the last non-nil one given to
// hotlimit.WithClock), or nil when they set none.
func Of(opts []hotlimit.Option) hotlimit.Clock {
	var o hotlimit.Options // applied to zero Options, only WithClock sets a clock
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o.Clock
}
