// Package burst says when two limits differ only in whether they write out
// their burst, so that they are one limiter: package service keys a rule's
// limiters by it, and so does envoyrls a configuration's, so that a change
// of the rules that only writes the burst out, or drops it, keeps every
// key's state in both. It also writes out the burst a limit takes from the
// limiters' default, so that both report the capacity their limiters
// enforce.
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

// Spelled returns c with the limiters' default burst, defBurst
// (hotlimit.Options.Burst, set by hotlimit.WithBurst), as its burst when c
// is a token bucket or a GCRA (hotlimit.Algorithm.HasBurst) that sets none
// and there is a default: c as its limiter enforces it, whose
// [hotlimit.Config.Capacity] is the most a key's Remaining can be. It
// builds the same limiter as c (Unspelled of both is one Config).
func Spelled(c hotlimit.Config, defBurst int) hotlimit.Config {
	if c.Burst == 0 && defBurst > 0 && c.Algorithm.HasBurst() {
		c.Burst = defBurst
	}
	return c
}

// Options returns opts, with which a limit of c is to be built, with the
// limiters' default burst (hotlimit.WithBurst among opts) taken off when
// c's algorithm has no burst: the default is for the token buckets and
// GCRAs that set none, and the constructors of the other algorithms, in
// memory or on Redis, reject any burst. opts itself is never changed.
func Options(c hotlimit.Config, opts []hotlimit.Option) []hotlimit.Option {
	if !c.Algorithm.HasBurst() && hotlimit.NewOptions(opts...).Burst > 0 {
		return append(opts[:len(opts):len(opts)], hotlimit.WithBurst(0))
	}
	return opts
}
