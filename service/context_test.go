package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

type ctxKey struct{}

// remoteLimiter is a factory's limiter that takes a context, as redislimit's
// does: it admits the first Limit requests of each key, records the context
// and key of every call, fails with ctx's error (deciding anyway) when ctx
// is done, and counts its Close calls.
type remoteLimiter struct {
	countingLimiter
	calls    []string // "take key ctxvalue", "refund key ctxvalue"
	closed   int
	closeErr error
}

var (
	_ hotlimit.ContextTaker    = (*remoteLimiter)(nil)
	_ hotlimit.ContextRefunder = (*remoteLimiter)(nil)
)

func (l *remoteLimiter) record(op, key string, ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, _ := ctx.Value(ctxKey{}).(string)
	l.calls = append(l.calls, op+" "+key+" "+v)
	return ctx.Err()
}

func (l *remoteLimiter) TakeContext(ctx context.Context, key string, n int) (hotlimit.Decision, error) {
	err := l.record("take", key, ctx)
	return l.Take(key, n), err
}

func (l *remoteLimiter) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d := l.Take(key, n)
	if d.Allowed && n > 0 {
		return d, hotlimit.Receipt{N: n, At: 1}
	}
	return d, hotlimit.Receipt{}
}

func (l *remoteLimiter) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	err := l.record("take", key, ctx)
	d, r := l.TakeReceipt(key, n)
	return d, r, err
}

func (l *remoteLimiter) Refund(key string, r hotlimit.Receipt) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen[key] -= r.N
}

func (l *remoteLimiter) RefundContext(ctx context.Context, key string, r hotlimit.Receipt) error {
	err := l.record("refund", key, ctx)
	l.Refund(key, r)
	return err
}

func (l *remoteLimiter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed++
	return l.closeErr
}

// remoteFactory builds remoteLimiters and keeps them by limit.
type remoteFactory struct {
	mu    sync.Mutex
	built map[int]*remoteLimiter
}

func (f *remoteFactory) build(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := &remoteLimiter{countingLimiter: countingLimiter{c: c, seen: map[string]int{}}}
	if f.built == nil {
		f.built = map[int]*remoteLimiter{}
	}
	f.built[c.Limit] = l
	return l, nil
}

func TestTakeContextReachesTheLimiter(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.New(cfg(hotlimit.FixedWindow, 2), hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-1")
	d, err := s.TakeContext(ctx, "zed", "GET /pay", 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, []string{"take 3:zed|GET /pay req-1"}, f.built[2].calls)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	d, err = s.TakeContext(cancelled, "zed", "GET /pay", 1)
	assert.ErrorIs(t, err, context.Canceled, "the limiter's error comes back")
	assert.True(t, d.Allowed, "with the decision it made")
	d, err = s.TakeContext(ctx, "zed", "GET /pay", 1)
	assert.NoError(t, err)
	assert.False(t, d.Allowed)
}

// TestTakeContextAsksUnderTheScopesKey: a limit of one scope is asked under
// ctx with its scope's key, the user's or the api's, not the pair's.
func TestTakeContextAsksUnderTheScopesKey(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{scoped(cfg(hotlimit.FixedWindow, 2), hotlimit.PerUser)},
		APIs:    map[string]service.Limits{"GET /s": {scoped(cfg(hotlimit.FixedWindow, 3), hotlimit.PerAPI)}},
	}, hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-1")
	_, err = s.TakeContext(ctx, "zed", "GET /pay", 1)
	require.NoError(t, err)
	_, err = s.TakeContext(ctx, "zed", "GET /s", 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"take user|zed req-1"}, f.built[2].calls)
	assert.Equal(t, []string{"take api|GET /s req-1"}, f.built[3].calls)
}

// TestTakeContextReachesEveryLimitOfARule: under a rule of two limits, both
// are asked under ctx; when the second denies, the first gives its request
// back under ctx's values but without its cancellation.
func TestTakeContextReachesEveryLimitOfARule(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{
		scoped(cfg(hotlimit.FixedWindow, 5), hotlimit.PerUser), cfg(hotlimit.TokenBucket, 1),
	}}, hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-2")
	d, err := s.TakeContext(ctx, "zed", "a", 1)
	require.NoError(t, err)
	require.True(t, d.Allowed)
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	d, err = s.TakeContext(cancelled, "zed", "a", 1)
	assert.False(t, d.Allowed, "the per-pair limit of 1 denies")
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{
		"take user|zed req-2", "take user|zed req-2", "refund user|zed req-2",
		"take user|zed req-2", // n = 0, to report its state in the denial
	}, f.built[5].calls)
	assert.Equal(t, 1, f.built[5].seen["user|zed"], "the denied request was given back")
	assert.Equal(t, []string{"take 3:zed|a req-2", "take 3:zed|a req-2"}, f.built[1].calls)
}

func TestTakeContextInMemory(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 1))
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	d, err := s.TakeContext(cancelled, "u", "a", 1)
	assert.NoError(t, err, "in-memory limiters decide at once")
	assert.True(t, d.Allowed)
	d, err = s.TakeContext(context.Background(), "u", "a", 1)
	assert.NoError(t, err)
	assert.False(t, d.Allowed)
	assert.NoError(t, s.Close(), "nothing to close")
	assert.False(t, s.Allow("u", "a"), "and the service still decides")
}

func TestCloseClosesTheLimitersThatHoldResources(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{cfg(hotlimit.FixedWindow, 2)},
		APIs:    map[string]service.Limits{"x": {cfg(hotlimit.FixedWindow, 3)}, "y": {cfg(hotlimit.FixedWindow, 3), cfg(hotlimit.GCRA, 4)}},
		Users:   map[string]service.Limits{"free": {{Algorithm: hotlimit.Unlimited}}},
	}, hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	f.built[4].closeErr = errors.New("four failed")
	err = s.Close()
	assert.ErrorContains(t, err, "four failed")
	for limit, l := range f.built {
		assert.Equal(t, 1, l.closed, "limiter %d closed once", limit)
	}
}

// TestTakeWithContextReachesTheLimiter: a limit given with the call is
// decided under the call's context too, so a request's deadline bounds a
// decision on Redis whichever way its limit was chosen.
func TestTakeWithContextReachesTheLimiter(t *testing.T) {
	f := &remoteFactory{}
	s, err := service.New(cfg(hotlimit.FixedWindow, 2), hotlimit.WithFactory(f.build))
	require.NoError(t, err)
	plan := cfg(hotlimit.FixedWindow, 5)
	ctx := context.WithValue(context.Background(), ctxKey{}, "req-1")
	d, err := s.TakeWithContext(ctx, "zed", "GET /pay", plan, 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, []string{"take 3:zed|GET /pay req-1"}, f.built[5].calls)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	d, err = s.TakeWithContext(cancelled, "zed", "GET /pay", plan, 1)
	assert.ErrorIs(t, err, context.Canceled, "the limiter's error comes back")
	assert.True(t, d.Allowed, "with the decision it made")
	assert.Equal(t, 2, f.built[5].seen["3:zed|GET /pay"])
	_, err = s.TakeWith("zed", "GET /pay", plan, 1)
	require.NoError(t, err)
	assert.Equal(t, 3, f.built[5].seen["3:zed|GET /pay"], "one quota with TakeWith's")

	_, err = s.TakeWithContext(ctx, "zed", "GET /pay", cfg(hotlimit.FixedWindow, 0), 1)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
}

// TestEndedDecisionOfSeveralLimitsCountsNowhere: a rule of a limit in
// memory and one on a backend that, asked while the request's context ends,
// cannot decide and passes it counting nothing (a failure policy that fails
// open). The request has ended and will not be served, so the memory limit
// gives back what it took, whatever the order of the two: its next request
// finds its whole quota. A live request is counted as before.
func TestEndedDecisionOfSeveralLimitsCountsNowhere(t *testing.T) {
	remote := &limitertest.CancelingRefunder{}
	memory := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	onBackend := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser}
	for _, order := range []service.Limits{{memory, onBackend}, {onBackend, memory}} {
		s, err := service.NewFromRules(service.Rules{Default: order},
			hotlimit.WithFactory(func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
				if c.Limit == onBackend.Limit {
					return remote, nil
				}
				return service.NewLimiter(c, opts...)
			}))
		require.NoError(t, err)
		memoryRemaining := func() int {
			remote.Cancel = nil
			_, each, err := s.TakeEach(context.Background(), "u", "a", 0, nil)
			require.NoError(t, err)
			for _, ld := range each {
				if ld.Config == memory {
					return ld.Decision.Remaining
				}
			}
			t.Fatalf("%v: the memory limit is not listed", order)
			return 0
		}

		ctx, cancel := context.WithCancel(context.Background())
		remote.Cancel = cancel
		d, err := s.TakeContext(ctx, "u", "a", 1)
		require.Error(t, err, "%v", order)
		require.Error(t, ctx.Err(), "%v", order)
		assert.True(t, d.Allowed, "%v: the failure policy's pass", order)
		assert.Equal(t, 3, memoryRemaining(), "%v: the ended request counts nowhere", order)

		_, err = s.TakeContext(context.Background(), "u", "a", 1)
		require.NoError(t, err, "%v", order)
		assert.Equal(t, 2, memoryRemaining(), "%v: a live request counts", order)
	}
}
