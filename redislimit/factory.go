package redislimit

import (
	"slices"

	"github.com/hotlimit/hotlimit"
	"github.com/redis/go-redis/v9"
)

// Factory returns a [hotlimit.Factory] that builds Limiters on client with
// opts, for a service.Service whose every rule keeps its state in Redis:
//
//	svc, err := service.New(def, hotlimit.WithFactory(redislimit.Factory(client)))
//
// The service's own options (a clock) come first, then opts.
func Factory(client redis.UniversalClient, opts ...hotlimit.Option) hotlimit.Factory {
	return func(c hotlimit.Config, more ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := New(client, c, append(slices.Clip(more), opts...)...)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}
