package impl

import (
	"context"
	"fmt"
	"math"
	"time"

	golimiter "github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ululememory "github.com/ulule/limiter/v3/drivers/store/memory"
)

// GoLimiter is github.com/sethvargo/go-limiter's memorystore: a map under a
// RWMutex of buckets under their own mutex, Tokens = Limit per Interval =
// Window. It reads the wall clock (no clock can be given) and forgets keys
// idle for SweepMinTTL = Window on its own goroutine every SweepInterval.
//
// Its refill is not a continuous token bucket: after k whole intervals since
// the key's first request the count becomes min(Limit, k·Window/Limit) with
// Window in nanoseconds, so a key is refilled to Limit each interval only
// when Limit² ≤ Window in nanoseconds (100 per millisecond is, 65536 per
// millisecond is not: it then gets 15 tokens per millisecond).
func GoLimiter() Impl {
	return Impl{
		Name:     "golimiter",
		Eviction: EvictTimer,
		Notes:    "memorystore Tokens=Limit Interval=Window, SweepMinTTL=Window",
		New: func(p Policy, o Options) (*Instance, error) {
			if p.Limit < 1 || p.Window <= 0 {
				return nil, fmt.Errorf("impl: golimiter: policy %v must have a positive limit and window", p)
			}
			store, err := memorystore.New(&memorystore.Config{
				Tokens:        uint64(p.Limit),
				Interval:      p.Window,
				SweepInterval: o.EvictEvery, // 0: its default, 6 h
				SweepMinTTL:   p.Window,
			})
			if err != nil {
				return nil, fmt.Errorf("impl: golimiter: %w", err)
			}
			l := &goLimiter{store: store, ctx: context.Background()}
			return &Instance{Limiter: l, Close: func() { _ = store.Close(l.ctx) }}, nil
		},
	}
}

type goLimiter struct {
	store golimiter.Store
	ctx   context.Context
}

func (l *goLimiter) Allow(key string) bool {
	_, _, _, ok, err := l.store.Take(l.ctx, key)
	return ok && err == nil
}

// Throttled is github.com/throttled/throttled/v2's GCRA over its memstore
// (memstore.New(0): a map under a RWMutex of *int64 updated by CAS, no key
// limit, no eviction). MaxRate = Limit per Window and MaxBurst = Limit-1,
// which throttled reads as a burst of Limit. Its emission interval is
// Window/Limit truncated to whole nanoseconds, so it is exact when Limit
// divides Window in nanoseconds (100 per 1 ms, 1 per 1 h), and refills up to
// 1/(Window/Limit) faster otherwise (15 ns for 15.26 ns at 65536 per 1 ms,
// 1.7%, a policy under which no benchmark runs out).
//
// Its CAS retry budget is unbounded (SetMaxCASAttemptsLimit(math.MaxInt)),
// as hotlimit's and the mutex port's retries are: with throttled's default of
// 10, a call that loses 10 CAS races in a row on a hot key returns an error
// instead of a decision, which is not the policy (a denial counted here,
// about 5% of the calls on one hot key at -cpu 2). An error that remains
// counts as a denial.
func Throttled() Impl {
	return Impl{
		Name:     "throttled",
		Clock:    true,
		Eviction: EvictNone,
		Notes:    "GCRA, memstore.New(0), PerDuration(Limit, Window), MaxBurst Limit-1, unbounded CAS retries",
		New: func(p Policy, o Options) (*Instance, error) {
			store, err := memstore.New(0)
			if err != nil {
				return nil, fmt.Errorf("impl: throttled: %w", err)
			}
			if c := o.Clock; c != nil {
				store.SetTimeNow(func() time.Time { return time.Unix(0, c()) })
			}
			l, err := newThrottled(p, throttled.WrapStoreWithContext(store))
			if err != nil {
				return nil, err
			}
			return &Instance{Limiter: l, Close: nop}, nil
		},
	}
}

// newThrottled is Throttled's limiter over store.
func newThrottled(p Policy, store throttled.GCRAStoreCtx) (*throttledLimiter, error) {
	if p.Limit < 1 || p.Window <= 0 || p.Window/time.Duration(p.Limit) <= 0 {
		return nil, fmt.Errorf("impl: throttled: policy %v needs a window of at least limit nanoseconds", p)
	}
	gcra, err := throttled.NewGCRARateLimiterCtx(store,
		throttled.RateQuota{MaxRate: throttled.PerDuration(p.Limit, p.Window), MaxBurst: p.Limit - 1})
	if err != nil {
		return nil, fmt.Errorf("impl: throttled: %w", err)
	}
	gcra.SetMaxCASAttemptsLimit(math.MaxInt)
	return &throttledLimiter{gcra: gcra, ctx: context.Background()}, nil
}

type throttledLimiter struct {
	gcra *throttled.GCRARateLimiterCtx
	ctx  context.Context
}

func (l *throttledLimiter) Allow(key string) bool {
	limited, _, err := l.gcra.RateLimitCtx(l.ctx, key, 1)
	return !limited && err == nil
}

// Ulule is github.com/ulule/limiter/v3 with its memory store: a sync.Map of
// counters under their own RWMutex, a fixed window of Window starting at a
// key's first request, keyed by "limiter:" + key. It reads the wall clock and
// deletes expired counters on its own goroutine every CleanUpInterval
// (default 30 s).
func Ulule() Impl {
	return Impl{
		Name:     "ulule",
		Eviction: EvictTimer,
		Notes:    "memory store, Rate{Period: Window, Limit: Limit}, Get per request",
		New: func(p Policy, o Options) (*Instance, error) {
			if p.Limit < 1 || p.Window <= 0 {
				return nil, fmt.Errorf("impl: ulule: policy %v must have a positive limit and window", p)
			}
			every := o.EvictEvery
			if every <= 0 {
				every = ulule.DefaultCleanUpInterval
			}
			store := ululememory.NewStoreWithOptions(ulule.StoreOptions{
				Prefix:          ulule.DefaultPrefix,
				CleanUpInterval: every,
			})
			l := &ululeLimiter{
				lim: ulule.New(store, ulule.Rate{Period: p.Window, Limit: int64(p.Limit)}),
				ctx: context.Background(),
			}
			// The store's cleaner goroutine stops when the store is collected.
			return &Instance{Limiter: l, Close: nop}, nil
		},
	}
}

type ululeLimiter struct {
	lim *ulule.Limiter
	ctx context.Context
}

func (l *ululeLimiter) Allow(key string) bool {
	c, err := l.lim.Get(l.ctx, key)
	return err == nil && !c.Reached
}
