package service

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/internal/burst"
	"github.com/hotlimit/hotlimit/internal/nilness"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
	"github.com/hotlimit/hotlimit/unlimited"
)

// constructor builds a limiter of one algorithm.
type constructor func(limit int, window time.Duration, opts ...hotlimit.Option) (hotlimit.Limiter, error)

// constructors is the factory: one entry per algorithm.
var constructors = map[hotlimit.Algorithm]constructor{
	hotlimit.TokenBucket:    adapt(tokenbucket.New),
	hotlimit.FixedWindow:    adapt(fixedwindow.New),
	hotlimit.SlidingLog:     adapt(slidinglog.New),
	hotlimit.GCRA:           adapt(gcra.New),
	hotlimit.SlidingCounter: adapt(slidingcounter.New),
	hotlimit.Unlimited: func(_ int, _ time.Duration, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		return unlimited.New(opts...)
	},
}

// adapt turns a package's typed constructor into a constructor, returning a
// nil interface (not a typed nil) on error.
func adapt[L hotlimit.Limiter](newLimiter func(int, time.Duration, ...hotlimit.Option) (L, error)) constructor {
	return func(limit int, window time.Duration, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l, err := newLimiter(limit, window, opts...)
		if err != nil {
			return nil, err
		}
		return l, nil
	}
}

// NewLimiter builds the limiter that c names. It returns an error wrapping
// hotlimit.ErrInvalidConfig when c is invalid or outside its algorithm's
// range, or has a scope other than hotlimit.PerPair: a scope says which key a
// rule of a [Service] counts, and a limiter on its own counts the key it is
// given.
func NewLimiter(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if c.Scope != hotlimit.PerPair {
		return nil, fmt.Errorf("service: Config.Scope %v: a limiter on its own counts the keys it is given; only a rule of a Service has a scope: %w", c.Scope, hotlimit.ErrInvalidConfig)
	}
	newLimiter, ok := constructors[c.Algorithm]
	if !ok {
		return nil, fmt.Errorf("service: Config.Algorithm %v has no limiter: %w", c.Algorithm, hotlimit.ErrInvalidConfig)
	}
	if c.Burst > 0 {
		opts = append(opts[:len(opts):len(opts)], hotlimit.WithBurst(c.Burst))
	}
	return newLimiter(c.Limit, c.Window, opts...)
}

// newLimiter builds c's limiter with the factory that opts name, if any, else
// with [NewLimiter]. Unlimited has no state to share: it is always built here.
//
// The service's default burst (hotlimit.WithBurst among opts) is for the
// algorithms that have one: the others are built without it, as their
// constructors reject any burst.
func newLimiter(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	opts = burst.Options(c, opts)
	if f := hotlimit.NewOptions(opts...).Factory; f != nil && c.Algorithm != hotlimit.Unlimited {
		// The factory checks its own ranges, which may differ from the
		// in-memory limiters'.
		if err := c.ValidateFields(); err != nil {
			return nil, err
		}
		l, err := f(c, opts...)
		if err == nil && nilness.Is(l) {
			// A nil limiter would be called by the first decision.
			return nil, fmt.Errorf("service: the factory returned no limiter and no error for %v", c)
		}
		return l, err
	}
	return NewLimiter(c, opts...)
}

// sweeper is what every limiter of this module offers besides
// hotlimit.Limiter; a factory's limiters may lack it.
type sweeper interface {
	Len() int
	Sweep() int
}
