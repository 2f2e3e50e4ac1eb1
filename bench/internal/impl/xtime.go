package impl

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/puzpuzpuz/xsync/v3"
	"golang.org/x/time/rate"
)

// XTime is golang.org/x/time/rate keyed the way people key it: one
// *rate.Limiter per key in an xsync.MapOf, created on a key's first request
// (LoadOrCompute, so two first requests never make two limiters). Burst is
// Limit, the rate Limit per Window.
func XTime() Impl {
	return Impl{
		Name:     "xtime",
		Clock:    true,
		Eviction: EvictJanitor,
		Notes:    "xsync.MapOf of *rate.Limiter(Limit/Window, burst Limit); janitor deletes full limiters",
		New: func(p Policy, o Options) (*Instance, error) {
			if p.Limit < 1 || p.Window <= 0 {
				return nil, fmt.Errorf("impl: xtime: policy %v must have a positive limit and window", p)
			}
			l := &xtimeLimiter{
				limiters: xsync.NewMapOf[string, *rate.Limiter](),
				rate:     rate.Limit(float64(p.Limit) / p.Window.Seconds()),
				burst:    p.Limit,
				clock:    o.Clock,
			}
			return &Instance{Limiter: l, Sweep: l.Sweep, Len: l.limiters.Size, Close: nop}, nil
		},
	}
}

type xtimeLimiter struct {
	limiters *xsync.MapOf[string, *rate.Limiter]
	rate     rate.Limit
	burst    int
	clock    hotlimit.Clock // nil: rate.Limiter's own time.Now
}

func (l *xtimeLimiter) get(key string) *rate.Limiter {
	lim, ok := l.limiters.Load(key)
	if !ok {
		lim, _ = l.limiters.LoadOrCompute(key, func() *rate.Limiter { return rate.NewLimiter(l.rate, l.burst) })
	}
	return lim
}

func (l *xtimeLimiter) Allow(key string) bool {
	if l.clock == nil {
		return l.get(key).Allow()
	}
	return l.get(key).AllowN(time.Unix(0, l.clock()), 1)
}

func (l *xtimeLimiter) now() time.Time {
	if l.clock == nil {
		return time.Now()
	}
	return time.Unix(0, l.clock())
}

// Sweep is the janitor users of x/time/rate write: delete limiters whose
// bucket is full again. rate.Limiter cannot be marked dead, so an Allow that
// loaded a limiter just before it is deleted counts against a limiter no
// longer in the map: the usual janitor can forget one admission per race.
func (l *xtimeLimiter) Sweep() {
	now := l.now()
	l.limiters.Range(func(key string, lim *rate.Limiter) bool {
		if lim.TokensAt(now) >= float64(l.burst) {
			l.limiters.Compute(key, func(old *rate.Limiter, loaded bool) (*rate.Limiter, bool) {
				return old, !loaded || old == lim
			})
		}
		return true
	})
}
