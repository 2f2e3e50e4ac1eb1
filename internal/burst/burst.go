// Package burst says when two limits differ only in whether they write out
// their burst, so that they are one limiter: package service keys a rule's
// limiters by it, and so does envoyrls a configuration's, so that a change
// of the rules that only writes the burst out, or drops it, keeps every
// key's state in both.
package burst

import "github.com/hotlimit/hotlimit"

// Unspelled returns c with its burst as 0 when it is the burst a burst of 0
// stands for: the limiters' default burst, defBurst (hotlimit.Options.Burst,
// set by hotlimit.WithBurst), when there is one, else the limit. Only a
// token bucket or a GCRA (hotlimit.Algorithm.HasBurst) has a burst. Two
// Configs alike but for that build the same limiter.
func Unspelled(c hotlimit.Config, defBurst int) hotlimit.Config {
	if c.Algorithm.HasBurst() && (defBurst == 0 && c.Burst == c.Limit || defBurst > 0 && c.Burst == defBurst) {
		c.Burst = 0
	}
	return c
}
