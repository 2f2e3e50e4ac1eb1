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
	"github.com/hotlimit/hotlimit/service"
)

// countingLimiter is a factory's limiter: a plain Limiter (no Len, Sweep or
// Refund) that admits the first limit requests of each key.
type countingLimiter struct {
	c    hotlimit.Config
	mu   sync.Mutex
	seen map[string]int
}

func (l *countingLimiter) Allow(key string) bool { return l.Take(key, 1).Allowed }

func (l *countingLimiter) Take(key string, n int) hotlimit.Decision {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := hotlimit.Decision{Limit: l.c.Limit}
	if n >= 0 && l.seen[key]+n <= l.c.Limit {
		l.seen[key] += n
		d.Allowed = true
	}
	d.Remaining = l.c.Limit - l.seen[key]
	return d
}

func TestWithFactoryBuildsEveryLimiter(t *testing.T) {
	var built []hotlimit.Config
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 13 {
			return nil, errors.New("thirteen: " + hotlimit.ErrInvalidConfig.Error())
		}
		built = append(built, c)
		return &countingLimiter{c: c, seen: map[string]int{}}, nil
	}
	def := cfg(hotlimit.TokenBucket, 2)
	s, err := service.New(def, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.NoError(t, s.ConfigureUser("alice", cfg(hotlimit.FixedWindow, 3)))
	assert.Equal(t, []hotlimit.Config{def, cfg(hotlimit.FixedWindow, 3)}, built)

	assert.Equal(t, 2, passes(s, "bob", "x", 5), "the factory's limiter decides the default rule")
	assert.Equal(t, 3, passes(s, "alice", "x", 5), "and the user's rule")
	assert.Zero(t, s.Len(), "a factory limiter without Len counts nothing")
	assert.Zero(t, s.Sweep())

	err = s.ConfigureAPI("y", cfg(hotlimit.FixedWindow, 13))
	assert.ErrorContains(t, err, "thirteen", "the factory's error is returned")
	assert.Equal(t, cfg(hotlimit.TokenBucket, 2), s.Resolve("bob", "y"), "and nothing changed")

	_, err = service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Window: time.Second}, hotlimit.WithFactory(factory))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "the Config is validated before the factory sees it")
	assert.Len(t, built, 2)
}

func TestSeveralLimitsNeedRefundingFactoryLimiters(t *testing.T) {
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		return &countingLimiter{c: c, seen: map[string]int{}}, nil
	}
	_, err := service.NewFromRules(service.Rules{Default: service.Limits{cfg(hotlimit.TokenBucket, 2), cfg(hotlimit.FixedWindow, 5)}},
		hotlimit.WithFactory(factory))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "Refunder")
	assert.ErrorContains(t, err, "service: default[0]: ", "names the limit")
}

// TestFactoryReturningNoLimiterIsAnError gives the service a factory that
// returns neither a limiter nor an error: New, Replace and TakeWith report
// it, naming the limit, instead of accepting rules whose first decision
// would dereference nil.
func TestFactoryReturningNoLimiterIsAnError(t *testing.T) {
	nothing := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return nil, nil })
	fw := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}

	_, err := service.New(fw, nothing)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "default[0]")
	assert.Contains(t, err.Error(), "FixedWindow 3/1s")

	// A service whose rules are all Unlimited (built without the factory)
	// meets the factory only at a Replace or a TakeWith.
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.Unlimited}, nothing)
	require.NoError(t, err)
	err = svc.ConfigureAPI("GET /pay", fw)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `apis["GET /pay"][0]`)
	assert.True(t, svc.Allow("alice", "GET /pay"), "the rejected rule changed nothing")

	d, err := svc.TakeWith("alice", "GET /pay", fw, 1)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "FixedWindow 3/1s")
	assert.False(t, d.Allowed)
	assert.Equal(t, hotlimit.Never, d.RetryAfter)

	// A nil pointer in the interface is no limiter either.
	typedNil := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		var l *countingLimiter
		return l, nil
	})
	_, err = service.New(fw, typedNil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no limiter")
}

// closingLimiter is a countingLimiter that holds a resource: Close records
// that it was released.
type closingLimiter struct {
	countingLimiter
	closed int
}

func (l *closingLimiter) Close() error { l.closed++; return nil }

// TestRulesFailingToBuildCloseTheLimitersBuiltForThem gives Replace rules
// whose second new limit the factory cannot build: the limiter it did build
// for the first, which no decision will ever use, is closed, and the
// limiter of the rules in force, reused by the failed rules, is not.
func TestRulesFailingToBuildCloseTheLimitersBuiltForThem(t *testing.T) {
	var made []*closingLimiter
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 13 {
			return nil, errors.New("backend unreachable")
		}
		l := &closingLimiter{countingLimiter: countingLimiter{c: c, seen: map[string]int{}}}
		made = append(made, l)
		return l, nil
	}
	def := cfg(hotlimit.TokenBucket, 2)
	s, err := service.New(def, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.Len(t, made, 1)

	err = s.Replace(service.Rules{
		Default: service.Limits{def},
		APIs: map[string]service.Limits{
			"a": {cfg(hotlimit.FixedWindow, 3)},
			"b": {cfg(hotlimit.FixedWindow, 13)},
		},
	})
	require.ErrorContains(t, err, "backend unreachable")
	require.Len(t, made, 2, "the factory built the first new limit before the second failed")
	assert.Equal(t, 1, made[1].closed, "the limiter built for the rules that failed is closed")
	assert.Zero(t, made[0].closed, "the limiter in force, which the failed rules reused, is not")
	assert.Equal(t, 2, passes(s, "bob", "a", 5), "and the rules in force still decide")
}

// TestRulesWhoseFactoryPanicsCloseTheLimitersBuiltForThem is the test
// above with a factory that panics instead of failing: the panic reaches
// Replace's caller, and the limiter built before it is closed all the same.
func TestRulesWhoseFactoryPanicsCloseTheLimitersBuiltForThem(t *testing.T) {
	var made []*closingLimiter
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		if c.Limit == 13 {
			panic("factory bug")
		}
		l := &closingLimiter{countingLimiter: countingLimiter{c: c, seen: map[string]int{}}}
		made = append(made, l)
		return l, nil
	}
	def := cfg(hotlimit.TokenBucket, 2)
	s, err := service.New(def, hotlimit.WithFactory(factory))
	require.NoError(t, err)

	require.PanicsWithValue(t, "factory bug", func() {
		_ = s.Replace(service.Rules{
			Default: service.Limits{def},
			APIs: map[string]service.Limits{
				"a": {cfg(hotlimit.FixedWindow, 3)},
				"b": {cfg(hotlimit.FixedWindow, 13)},
			},
		})
	})
	require.Len(t, made, 2, "the factory built the first new limit before it panicked")
	assert.Equal(t, 1, made[1].closed, "the limiter built for the rules that panicked is closed")
	assert.Zero(t, made[0].closed, "the limiter in force is not")
	assert.Equal(t, 2, passes(s, "bob", "a", 5), "and the rules in force still decide")
}

// TestTakeWithClosesTheLimiterItDrops holds two first uses of one
// TakeWith Config inside the factory until both have built a limiter: one
// limiter is kept and decides both, the other is dropped, and closed.
func TestTakeWithClosesTheLimiterItDrops(t *testing.T) {
	var (
		mu   sync.Mutex
		made []*closingLimiter
		both = make(chan struct{})
	)
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		l := &closingLimiter{countingLimiter: countingLimiter{c: c, seen: map[string]int{}}}
		mu.Lock()
		made = append(made, l)
		if len(made) == 2 {
			close(both)
		}
		mu.Unlock()
		<-both
		return l, nil
	}
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.Unlimited}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	plan := cfg(hotlimit.FixedWindow, 3)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.TakeWith("alice", "x", plan, 1)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	require.Len(t, made, 2)
	assert.Equal(t, 1, made[0].closed+made[1].closed, "one of the two limiters is dropped, and closed")
	kept := made[0]
	if kept.closed > 0 {
		kept = made[1]
	}
	assert.Zero(t, kept.closed)
	taken := 0
	for _, n := range kept.seen {
		taken += n
	}
	assert.Equal(t, 2, taken, "the kept limiter decided both")
}

// TestTakeWithNamesTheLimitItCouldNotBuild: the factory's error at
// TakeWith's first use of a plan (its backend out of reach) names the
// plan, as a rule's names its entry, so that a log line tells which plan
// could not be built.
func TestTakeWithNamesTheLimitItCouldNotBuild(t *testing.T) {
	failing := hotlimit.WithFactory(func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		return nil, errors.New("backend unreachable")
	})
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.Unlimited}, failing)
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 7, Window: time.Second, Scope: hotlimit.PerUser}
	d, err := svc.TakeWith("alice", "GET /pay", plan, 1)
	assert.ErrorContains(t, err, "backend unreachable")
	assert.ErrorContains(t, err, "GCRA 7/1s per user")
	assert.False(t, d.Allowed)
	_, err = svc.TakeWithContext(context.Background(), "alice", "GET /pay", plan, 1)
	assert.ErrorContains(t, err, "GCRA 7/1s per user")
}
