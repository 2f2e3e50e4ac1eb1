package impl

import (
	"fmt"
	"sync"

	"github.com/hotlimit/hotlimit"
	"github.com/puzpuzpuz/xsync/v3"
)

// Mutex is the original design ported literally, the baseline: a concurrent
// map of per-key states, each guarded by its own sync.Mutex, holding a
// float64 token bucket (capacity Limit, refilled continuously at Limit per
// Window, a new key starts full).
func Mutex() Impl {
	return Impl{
		Name:     "mutex",
		Clock:    true,
		Eviction: EvictSweep,
		Notes:    "xsync.MapOf of *{sync.Mutex; tokens float64; last int64}",
		New: func(p Policy, o Options) (*Instance, error) {
			if p.Limit < 1 || p.Window <= 0 {
				return nil, fmt.Errorf("impl: mutex: policy %v must have a positive limit and window", p)
			}
			l := &mutexLimiter{
				states:   xsync.NewMapOf[string, *mutexState](),
				capacity: float64(p.Limit),
				perNanos: float64(p.Limit) / float64(p.Window),
				clock:    o.Clock,
			}
			if l.clock == nil {
				l.clock = hotlimit.Monotonic
			}
			return &Instance{Limiter: l, Sweep: l.Sweep, Len: l.states.Size, Close: nop}, nil
		},
	}
}

type mutexLimiter struct {
	states   *xsync.MapOf[string, *mutexState]
	capacity float64
	perNanos float64 // tokens per nanosecond
	clock    hotlimit.Clock
}

// mutexState is one key's bucket; every field is read and written with mu held.
type mutexState struct {
	mu     sync.Mutex
	tokens float64
	last   int64 // clock reading of the last refill
	dead   bool  // removed from the map by Sweep: callers holding it reload
}

func (l *mutexLimiter) fresh() *mutexState {
	return &mutexState{tokens: l.capacity, last: l.clock()}
}

func (l *mutexLimiter) Allow(key string) bool {
	s, ok := l.states.Load(key)
	if !ok {
		s, _ = l.states.LoadOrCompute(key, l.fresh)
	}
	for {
		now := l.clock()
		s.mu.Lock()
		if s.dead {
			s.mu.Unlock()
			s = l.revive(key, s)
			continue
		}
		l.refill(s, now)
		allowed := s.tokens >= 1
		if allowed {
			s.tokens--
		}
		s.mu.Unlock()
		return allowed
	}
}

// refill adds the tokens earned since s.last; a clock that went back adds none.
func (l *mutexLimiter) refill(s *mutexState, now int64) {
	if now > s.last {
		s.tokens = min(l.capacity, s.tokens+float64(now-s.last)*l.perNanos)
		s.last = now
	}
}

// revive replaces the dead state under key with a fresh one, unless another
// caller already did, and returns the live state.
func (l *mutexLimiter) revive(key string, dead *mutexState) *mutexState {
	s, _ := l.states.Compute(key, func(old *mutexState, loaded bool) (*mutexState, bool) {
		if loaded && old != dead {
			return old, false
		}
		return l.fresh(), false
	})
	return s
}

// Sweep deletes the states of full buckets: a full bucket is a fresh one, so
// no decision changes. A state is marked dead under its lock before it leaves
// the map, so a caller that loaded it just before retries on a fresh state.
func (l *mutexLimiter) Sweep() {
	now := l.clock()
	l.states.Range(func(key string, s *mutexState) bool {
		s.mu.Lock()
		l.refill(s, now)
		full := !s.dead && s.tokens >= l.capacity
		if full {
			s.dead = true
		}
		s.mu.Unlock()
		if full {
			l.states.Compute(key, func(old *mutexState, loaded bool) (*mutexState, bool) {
				return old, !loaded || old == s
			})
		}
		return true
	})
}
