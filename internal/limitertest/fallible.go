package limitertest

import (
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
)

// Fallible is a backend named "redis" whose limiters report to an observer
// as redislimit's do, for the exporters' tests, without Redis: its Factory
// tells the observer of the backend as it builds each limiter, and while it
// is down each decision of theirs is a fallback.
type Fallible struct {
	down atomic.Pointer[string] // the reason of the fallbacks, nil while up
}

// Fail makes every decision from now on a fallback of reason, one of
// hotlimit.FallbackReasons.
func (b *Fallible) Fail(reason string) { b.down.Store(&reason) }

// Recover makes the backend decide again.
func (b *Fallible) Recover() { b.down.Store(nil) }

// Factory builds each limiter with memory, and tells the observer of the
// options, when it is a hotlimit.BackendObserver, of the backend "redis",
// as redislimit.New does. The limiter decides with memory's limiter; while
// the backend is down, it reports that decision to the observer, when it is
// a hotlimit.FallbackObserver, as a hotlimit.Fallback of the reason given
// to Fail.
func (b *Fallible) Factory(memory hotlimit.Factory) hotlimit.Factory {
	return func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := memory(c, opts...)
		if err != nil {
			return nil, err
		}
		obs, _ := hotlimit.NewOptions(opts...).Observer.(hotlimit.FallbackObserver)
		if bo, ok := obs.(hotlimit.BackendObserver); ok {
			bo.ObserveBackend("redis")
		}
		return &fallibleLimiter{b: b, lim: lim, c: c, obs: obs}, nil
	}
}

// fallibleLimiter is a limiter on a Fallible backend.
type fallibleLimiter struct {
	b   *Fallible
	lim hotlimit.Limiter
	c   hotlimit.Config
	obs hotlimit.FallbackObserver
}

// Allow is Take(key, 1).Allowed.
func (l *fallibleLimiter) Allow(key string) bool { return l.Take(key, 1).Allowed }

// Take decides with the limiter in memory, a fallback while the backend is
// down.
func (l *fallibleLimiter) Take(key string, n int) hotlimit.Decision {
	d := l.lim.Take(key, n)
	if r := l.b.down.Load(); r != nil && l.obs != nil {
		l.obs.ObserveFallback(hotlimit.Fallback{Backend: "redis", Reason: *r, Policy: l.c, Decision: d})
	}
	return d
}
