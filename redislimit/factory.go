package redislimit

import (
	"fmt"
	"slices"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

// Factory returns a [hotlimit.Factory] that builds Limiters on client with
// opts, for a service.Service whose every rule keeps its state in Redis:
//
//	svc, err := service.New(def, hotlimit.WithFactory(redislimit.Factory(client)))
//
// The service's own options (a clock, its default burst) come first, then
// opts. A clock among them is sent to Redis in place of its TIME, as New's
// is (see the package documentation), so every instance must read that one
// clock: a process's own, [hotlimit.Monotonic] or a hotlimit.CoarseClock,
// counts from the process's start, and instances started apart would each
// read the others' keys as written in their future or past. Give a service
// on Redis no clock but a test's. A [WithLease] among them is for the limits that can lease
// ([CanLease]): the others are built without it, and ask Redis on every
// request, where New alone rejects a lease for them; a lease that New
// rejects for the limits that can lease (its ttl shorter than a tick of the
// clock) is an error for them too.
//
// The default burst of the token buckets and GCRAs that set none is the
// service's to give, among its own options:
//
//	svc, err := service.New(def, hotlimit.WithBurst(20), hotlimit.WithFactory(redislimit.Factory(client)))
//
// (envoyrls.WithLimiterOptions for an envoyrls.Server). The service gives
// it to the limits that have a burst only, reports it as their capacity,
// and keys its limiters by it: a limit whose own burst is the one a burst
// of 0 stands for shares the limiter of that limit without a burst. A burst
// among opts, which the service cannot see, would be enforced under a
// capacity the service reports as the limit, and by a limit whose own burst
// is its limit too (one limiter with the limit without a burst); so when
// opts hold a [hotlimit.WithBurst] other than 0, every limiter fails to
// build, with an error wrapping [hotlimit.ErrInvalidConfig] that says where
// the burst goes. A WithBurst(0) among opts, no burst, leaves the service's.
func Factory(client redis.UniversalClient, opts ...hotlimit.Option) hotlimit.Factory {
	defBurst := hotlimit.NewOptions(opts...).Burst
	return func(c hotlimit.Config, more ...hotlimit.Option) (hotlimit.Limiter, error) {
		if defBurst != 0 {
			return nil, fmt.Errorf("redislimit: Factory given hotlimit.WithBurst(%d): the default burst goes among the service's options (envoyrls.WithLimiterOptions for an envoyrls.Server), which give it to the token buckets and GCRAs that set none and report it: %w", defBurst, hotlimit.ErrInvalidConfig)
		}
		// The burst is the service's, among more: a WithBurst(0) among
		// opts would otherwise build the limit without the burst the
		// service reports and keys by.
		all := append(slices.Clip(more), opts...)
		all = append(all, hotlimit.WithBurst(hotlimit.NewOptions(more...).Burst))
		if s := read(hotlimit.NewOptions(all...)); !CanLease(c.Algorithm) && s.leaseSize > 0 && s.invalidated == nil {
			// A lease New would reject for a limit that can lease is an
			// error here too, so that a rule set's lease is valid or not
			// whatever its algorithms (New reports an invalid option's).
			if err := s.leaseErr(tick(all)); err != nil {
				return nil, fmt.Errorf("redislimit: %v: %w", c, err)
			}
			all = append(all, WithLease(0, 0))
		}
		l, err := New(client, c, all...)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}
