package impl

import (
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// ServiceAPI is the api every request of impl=service names: the benchmarks'
// key is the user.
const ServiceAPI = "search"

func hotlimitImpls() []Impl {
	return []Impl{
		lockfree("tokenbucket", "lock-free token bucket", tokenbucket.New),
		lockfree("fixedwindow", "lock-free fixed window", fixedwindow.New),
		lockfree("slidinglog", "lock-free exact sliding log", slidinglog.New),
		lockfree("gcra", "lock-free GCRA", gcra.New),
		lockfree("slidingcounter", "lock-free sliding window counter", slidingcounter.New),
		CoarseTokenbucket(),
		Service(),
	}
}

// keyedLimiter is what each of hotlimit's limiter packages builds.
type keyedLimiter interface {
	hotlimit.Limiter
	Sweep() int
	Len() int
}

// lockfree adapts one of hotlimit's limiter packages, built with
// New(Limit, Window) and the benchmark's clock.
func lockfree[L keyedLimiter](name, what string, newLimiter func(int, time.Duration, ...hotlimit.Option) (L, error)) Impl {
	return Impl{
		Name: name, Hotlimit: true, Clock: true, Eviction: EvictSweep,
		Notes: name + ".New(Limit, Window): " + what,
		New: func(p Policy, o Options) (*Instance, error) {
			l, err := newLimiter(p.Limit, p.Window, hotlimit.WithClock(o.Clock))
			if err != nil {
				return nil, err
			}
			return &Instance{Limiter: l, Sweep: func() { l.Sweep() }, Len: l.Len, Close: nop}, nil
		},
	}
}

// CoarseResolution is the resolution of impl=coarse's clock.
const CoarseResolution = time.Millisecond

// CoarseTokenbucket is the token bucket reading an opt-in
// hotlimit.CoarseClock, advanced every CoarseResolution by one goroutine,
// instead of the monotonic clock: the cheapest decision hotlimit offers.
// Given a clock (the cross-check's frozen one), it reads that instead.
func CoarseTokenbucket() Impl {
	return Impl{
		Name: "coarse", Hotlimit: true, Clock: true, Eviction: EvictSweep,
		Notes: "tokenbucket.New(Limit, Window, WithClock(CoarseClock 1ms))",
		New: func(p Policy, o Options) (*Instance, error) {
			clock, stop := o.Clock, nop
			if clock == nil {
				c := hotlimit.NewCoarseClock(CoarseResolution)
				c.Start()
				clock, stop = c.Now, c.Stop
			}
			l, err := tokenbucket.New(p.Limit, p.Window, hotlimit.WithClock(clock))
			if err != nil {
				stop()
				return nil, err
			}
			return &Instance{Limiter: l, Sweep: func() { l.Sweep() }, Len: l.Len, Close: stop}, nil
		},
	}
}

// Service is hotlimit's service: Allow(user = key, api = ServiceAPI) under a
// default token-bucket policy. Rules for another user and another api are
// configured too, so resolution is not trivially the default; the benchmark's
// pairs resolve to the default.
//
// Its auto-sweep is off (WithAutoSweep(0)), as the other limiters' is: on by
// default, past service.DefaultAutoSweep keys it evicts the keys that went
// idle, which at 100 per 1 ms on the real clock is every key 10 µs after its
// request: at 100k keys a third of the fixture's keys were gone when the
// timed calls began, and those calls timed their insertion (12 B/op) instead
// of a decision on an existing key, as the other implementations' calls do.
func Service() Impl {
	return Impl{
		Name: "service", Hotlimit: true, Clock: true, Eviction: EvictSweep,
		Notes: "service.New(TokenBucket Limit/Window, WithAutoSweep(0)).Allow(key, \"" + ServiceAPI + "\")",
		New: func(p Policy, o Options) (*Instance, error) {
			def := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: p.Limit, Window: p.Window}
			s, err := service.New(def, hotlimit.WithClock(o.Clock), hotlimit.WithAutoSweep(0))
			if err != nil {
				return nil, err
			}
			other := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: p.Limit, Window: p.Window}
			if err := s.ConfigureAPI("export", other); err != nil {
				return nil, err
			}
			if err := s.ConfigureUser("admin", other); err != nil {
				return nil, err
			}
			return &Instance{Limiter: serviceLimiter{s}, Sweep: func() { s.Sweep() }, Len: s.Len, Close: nop}, nil
		},
	}
}

type serviceLimiter struct{ s *service.Service }

func (l serviceLimiter) Allow(key string) bool { return l.s.Allow(key, ServiceAPI) }
