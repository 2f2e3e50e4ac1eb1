package hotlimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/gcra"
	"github.com/hotlimit/hotlimit/service"
	"github.com/hotlimit/hotlimit/slidingcounter"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// frozenTime is a fake clock that only the test moves, and a sleep that
// waits for it: each sleep and each end of a wait is reported on events,
// so that the test moves the clock only once every waiter that runs has
// gone to sleep or returned. No outcome depends on the scheduler's timing.
type frozenTime struct {
	now      atomic.Int64
	mu       sync.Mutex
	sleepers []frozenSleeper
	events   chan struct{}
}

type frozenSleeper struct {
	until int64
	wake  chan struct{}
}

func (f *frozenTime) sleep(ctx context.Context, d time.Duration) error {
	wake := make(chan struct{})
	f.mu.Lock()
	f.sleepers = append(f.sleepers, frozenSleeper{until: f.now.Load() + int64(d), wake: wake})
	f.mu.Unlock()
	f.events <- struct{}{}
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// advance moves the clock to the earliest sleeper's time and wakes every
// sleeper due by then, returning how many it woke.
func (f *frozenTime) advance() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	earliest := f.sleepers[0].until
	for _, s := range f.sleepers {
		earliest = min(earliest, s.until)
	}
	if earliest > f.now.Load() {
		f.now.Store(earliest)
	}
	woken, left := 0, f.sleepers[:0]
	for _, s := range f.sleepers {
		if s.until <= f.now.Load() {
			close(s.wake)
			woken++
		} else {
			left = append(left, s)
		}
	}
	f.sleepers = left
	return woken
}

// TestWaitCrowdIsServedAndNeverOverAdmitted: 12 waiters on one drained key
// of 5 per second, the clock frozen until all of them sleep, then moved to
// the earliest wake-up each time all that woke have slept again or
// returned: every waiter is served, none in error, and the times they
// passed at never exceed the policy (a bucket, and a composite or a
// service rule led by one: 5 per second of refill since the key was
// drained; a window: 5 per aligned window, the draining
// 5 included; a sliding log: 5 in any second).
func TestWaitCrowdIsServedAndNeverOverAdmitted(t *testing.T) {
	const waiters, limit = 12, 5
	window := time.Second
	kinds := []struct {
		name string
		new  func(hotlimit.Clock) (hotlimit.Limiter, error)
	}{
		{"tokenbucket", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			return tokenbucket.New(limit, window, hotlimit.WithClock(c))
		}},
		{"gcra", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			return gcra.New(limit, window, hotlimit.WithClock(c))
		}},
		{"fixedwindow", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			return fixedwindow.New(limit, window, hotlimit.WithClock(c))
		}},
		{"slidingcounter", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			return slidingcounter.New(limit, window, hotlimit.WithClock(c))
		}},
		{"slidinglog", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			return slidinglog.New(limit, window, hotlimit.WithClock(c))
		}},
		// A composite and a service rule whose first limit is the bucket
		// (the other, looser, only denies the request once more).
		{"composite", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			tb, err := tokenbucket.New(limit, window, hotlimit.WithClock(c))
			if err != nil {
				return nil, err
			}
			fw, err := fixedwindow.New(4*limit, 4*window, hotlimit.WithClock(c))
			if err != nil {
				return nil, err
			}
			return composite.New(tb, fw)
		}},
		{"service", func(c hotlimit.Clock) (hotlimit.Limiter, error) {
			s, err := service.NewFromRules(service.Rules{Default: service.Limits{
				{Algorithm: hotlimit.TokenBucket, Limit: limit, Window: window},
				{Algorithm: hotlimit.SlidingLog, Limit: 4 * limit, Window: 4 * window, Scope: hotlimit.PerAPI},
			}}, hotlimit.WithClock(c))
			return serviceLimiter{s: s, api: "GET /"}, err
		}},
	}
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			f := &frozenTime{events: make(chan struct{}, waiters)}
			t0 := int64(1000*time.Hour) + int64(window)/3 // inside a window
			f.now.Store(t0)
			l, err := kind.new(f.now.Load)
			require.NoError(t, err)
			require.True(t, l.Take("k", limit).Allowed)

			var mu sync.Mutex
			var passed []int64
			errs := make(chan error, waiters)
			for range waiters {
				go func() {
					err := hotlimit.Wait(context.Background(), l, "k", hotlimit.WithSleep(f.sleep))
					if err == nil {
						mu.Lock()
						passed = append(passed, f.now.Load())
						mu.Unlock()
					}
					errs <- err
					f.events <- struct{}{}
				}()
			}
			running, done := waiters, 0
			for round := 0; done < waiters; round++ {
				require.Less(t, round, 100*waiters, "the waiters are not served")
				for range running {
					<-f.events
				}
				for len(errs) > 0 {
					assert.NoError(t, <-errs)
					done++
				}
				if done < waiters {
					running = f.advance()
				}
			}
			require.Len(t, passed, waiters, "every waiter served")

			switch kind.name {
			case "tokenbucket", "gcra", "composite", "service":
				for _, at := range passed {
					n := 0
					for _, b := range passed {
						if b <= at {
							n++
						}
					}
					refill := int64(limit) * (at - t0) / int64(window)
					assert.LessOrEqual(t, int64(n), refill, "%d passed by %v after the drain", n, time.Duration(at-t0))
				}
			case "fixedwindow", "slidingcounter":
				perWindow := map[int64]int{t0 / int64(window): limit}
				for _, at := range passed {
					perWindow[at/int64(window)]++
				}
				for w, n := range perWindow {
					assert.LessOrEqual(t, n, limit, "window %d", w)
				}
			case "slidinglog":
				all := append([]int64{t0, t0, t0, t0, t0}, passed...)
				for _, start := range all {
					n := 0
					for _, at := range all {
						if at >= start && at < start+int64(window) {
							n++
						}
					}
					assert.LessOrEqual(t, n, limit, "in the second from %v", time.Duration(start-t0))
				}
			}
		})
	}
}
