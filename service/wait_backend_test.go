package service_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// contextKey marks the caller's context, to see it reach a backend.
type contextKey struct{}

// contextBackend is a limiter that takes a context, as redislimit's do:
// an in-memory one that records the context of every TakeContext, and
// counts the calls of Take, which a caller with a context must not make.
type contextBackend struct {
	hotlimit.Limiter
	mu    sync.Mutex
	seen  []any // the contextKey value of each TakeContext's ctx
	takes atomic.Int32
}

func (b *contextBackend) Take(key string, n int) hotlimit.Decision {
	b.takes.Add(1)
	return b.Limiter.Take(key, n)
}

func (b *contextBackend) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	b.mu.Lock()
	b.seen = append(b.seen, ctx.Value(contextKey{}))
	b.mu.Unlock()
	return b.Limiter.Take(key, n), nil
}

// TestWaitAsksABackendUnderTheCallersContext: a limit whose limiter takes
// a context is asked by WaitN with TakeContext under the caller's context,
// at each ask, so that the context bounds every round trip of the wait.
func TestWaitAsksABackendUnderTheCallersContext(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	backend := &contextBackend{}
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		backend.Limiter = lim
		return backend, err
	}
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second},
		hotlimit.WithClock(now.Load), hotlimit.WithFactory(factory))
	require.NoError(t, err)
	var slept []time.Duration
	ctx := context.WithValue(context.Background(), contextKey{}, "caller")
	require.NoError(t, svc.Wait(ctx, "u", "a", fakeSleep(&now, &slept)))
	require.NoError(t, svc.Wait(ctx, "u", "a", fakeSleep(&now, &slept)))
	assert.Equal(t, []time.Duration{time.Second}, slept, "the second waited for the next window")
	assert.Equal(t, []any{"caller", "caller", "caller"}, backend.seen, "three asks, each under the caller's context")
	assert.Zero(t, backend.takes.Load(), "no ask without the context")
}

// TestWaitReadsAReplaceMadeDuringTheSleep: the rules are read at each ask:
// a Replace made while a caller sleeps decides its next ask. Here the new
// rule's limit is a fresh one, which admits the request though the clock
// has not moved.
func TestWaitReadsAReplaceMadeDuringTheSleep(t *testing.T) {
	var now atomic.Int64
	now.Store(int64(time.Hour))
	tight := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Hour}
	svc, err := service.New(tight, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	require.True(t, svc.Allow("u", "a"))
	var slept []time.Duration
	loose := tight
	loose.Limit = 10
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		if slept = append(slept, d); len(slept) > 1 {
			return errors.New("denied again after the Replace") // the clock stays: it would wait for ever
		}
		return svc.Replace(service.Rules{Default: service.Limits{loose}})
	})
	require.NoError(t, svc.Wait(context.Background(), "u", "a", sleep))
	assert.Equal(t, []time.Duration{time.Hour}, slept, "one sleep, then the new rule admitted it")
	assert.Equal(t, 9, svc.Take("u", "a", 0).Remaining, "counted under the new rule, whose limiter counted nothing before")
}

// TestWaitCrowdNeverPassesMoreThanTheLimit: many callers waiting on one
// pair at once pass, window after window, exactly what the limit admits:
// with a frozen clock that the test moves a window at a time, each window
// passes min(limit, callers still waiting), and the others wait for the
// next.
func TestWaitCrowdNeverPassesMoreThanTheLimit(t *testing.T) {
	const limit, callers = 3, 16
	var now atomic.Int64
	now.Store(int64(time.Hour))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Second}, hotlimit.WithClock(now.Load))
	require.NoError(t, err)
	var (
		mu   sync.Mutex
		tick = make(chan struct{}) // closed when the clock moves a window
	)
	events := make(chan bool, callers) // true: passed; false: went to sleep
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		next := tick
		mu.Unlock()
		events <- false
		select {
		case <-next:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, callers)
	for range callers {
		go func() {
			err := svc.Wait(ctx, "u", "bank", sleep)
			if err == nil {
				events <- true
			}
			errs <- err
		}()
	}
	active, passedTotal := callers, 0
	for window := 0; active > 0; window++ {
		require.Less(t, window, callers, "every caller passes within %d windows", callers)
		passed := 0
		for range active { // each caller running passes or goes to sleep
			if <-events {
				passed++
			}
		}
		assert.Equal(t, min(limit, active), passed, "window %d", window)
		passedTotal += passed
		active -= passed
		mu.Lock()
		now.Add(int64(time.Second))
		close(tick)
		tick = make(chan struct{})
		mu.Unlock()
	}
	assert.Equal(t, callers, passedTotal)
	for range callers {
		assert.NoError(t, <-errs)
	}
}
