package redislimit_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/redislimit/internal/redistest"
	"github.com/hotlimit/hotlimit/service"
)

// TestServiceDenialClockPanicGivesBackTheOthers: when a limit denies a
// request that two limits on Redis took together, and the clock of the
// second panics as their give-backs are made (before the round trip, and
// again as its own give-back is made on the way out), the first still gets
// its request back, as when the limits give back one by one in reverse
// order, the limits before one that panics given back all the same; and
// the panic goes on.
func TestServiceDenialClockPanicGivesBackTheOthers(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	var clock limitertest.PanicClock
	clock.Now.Store(int64(time.Hour))
	panicky := hotlimit.WithClock(clock.Read)
	factory := func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
		switch c.Algorithm {
		case hotlimit.TokenBucket:
			return redislimit.New(client, c, frozenClock(), redislimit.WithTimeout(exactTimeout))
		case hotlimit.FixedWindow:
			return redislimit.New(client, c, panicky, redislimit.WithTimeout(exactTimeout))
		}
		l, err := service.NewLimiter(c)
		if err != nil {
			return nil, err
		}
		return spoiler{l.(hotlimit.Refunder), func(string) { clock.Arm(true) }}, nil
	}
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour},
		{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
		{Algorithm: hotlimit.SlidingCounter, Limit: 9, Window: time.Hour},
	}}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	t.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	require.PanicsWithValue(t, limitertest.PanicValue, func() { _, _ = svc.TakeContext(ctx, "zed", "GET /a", 2) })
	clock.Arm(false)
	_, each, err := svc.TakeEach(ctx, "zed", "GET /a", 0, nil)
	require.NoError(t, err)
	remaining := map[hotlimit.Algorithm]int{}
	for _, ld := range each {
		remaining[ld.Config.Algorithm] = ld.Decision.Remaining
	}
	assert.Equal(t, 4, remaining[hotlimit.TokenBucket], "the token bucket got its 2 back")
	assert.Equal(t, 4, remaining[hotlimit.FixedWindow], "the fixed window's give-back panicked: it keeps 2")
}

// TestServiceDenialGiveBackErrorIsTheLimits: when a limit on Redis that
// took a request cannot give it back in the denial's batch (its key of
// another type meanwhile), TakeEach tells that limit's give-back error and
// its report's, and no other limit's, as when the limits give back and
// report one by one.
func TestServiceDenialGiveBackErrorIsTheLimits(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	build := func(prefix string, wrap func(*redislimit.Limiter) hotlimit.Limiter) *service.Service {
		var spoiled *redislimit.Limiter // its key turns to another type at the denial
		factory := func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
			if c.Algorithm == hotlimit.SlidingCounter {
				l, err := service.NewLimiter(c)
				if err != nil {
					return nil, err
				}
				return spoiler{l.(hotlimit.Refunder), func(key string) {
					k := spoiled.RedisKey(key)
					require.NoError(t, client.Del(context.Background(), k).Err())
					require.NoError(t, client.LPush(context.Background(), k, "x").Err())
				}}, nil
			}
			l, err := redislimit.New(client, c, frozenClock(), redislimit.WithTimeout(exactTimeout),
				redislimit.WithPrefix(prefix), redislimit.WithFailPolicy(redislimit.FailOpen))
			if err != nil {
				return nil, err
			}
			t.Cleanup(func() { _ = l.Close() })
			if c.Algorithm == hotlimit.FixedWindow {
				spoiled = l
			}
			return wrap(l), nil
		}
		svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
			{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour},
			{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
			{Algorithm: hotlimit.SlidingCounter, Limit: 9, Window: time.Hour},
		}}, hotlimit.WithFactory(factory))
		require.NoError(t, err)
		t.Cleanup(func() { _ = svc.Close() })
		return svc
	}
	batched := build("all:", func(l *redislimit.Limiter) hotlimit.Limiter { return l })
	single := build("one:", func(l *redislimit.Limiter) hotlimit.Limiter { return oneByOne{ContextRefunder: l, config: l.Config()} })
	ctx := context.Background()
	bd, beach, berr := batched.TakeEach(ctx, "zed", "GET /a", 2, nil)
	sd, seach, serr := single.TakeEach(ctx, "zed", "GET /a", 2, nil)
	require.Error(t, serr)
	require.Error(t, berr)
	assert.False(t, bd.Allowed)
	assert.Equal(t, sd, bd)
	require.Len(t, beach, 3)
	for i := range beach {
		assert.Equal(t, seach[i].Decision, beach[i].Decision, "limit %d", i)
		assert.Equal(t, seach[i].Err == nil, beach[i].Err == nil, "limit %d", i)
		if seach[i].Err != nil && beach[i].Err != nil {
			assert.Equal(t, seach[i].Err.Error(), beach[i].Err.Error(), "limit %d", i)
		}
	}
	errOf := map[hotlimit.Algorithm]error{}
	for _, ld := range beach {
		errOf[ld.Config.Algorithm] = ld.Err
	}
	assert.NoError(t, errOf[hotlimit.TokenBucket], "the token bucket gave back and reported")
	assert.NoError(t, errOf[hotlimit.SlidingCounter], "the denier decided")
	require.Error(t, errOf[hotlimit.FixedWindow], "the fixed window could not give back")
	assert.Equal(t, 2, strings.Count(errOf[hotlimit.FixedWindow].Error(), "WRONGTYPE"), "its give-back's error and its report's: %v", errOf[hotlimit.FixedWindow])
	assert.Equal(t, composite.DecidingError(serr) == nil, composite.DecidingError(berr) == nil)
}

// spoiler is a limit that denies every request, calling spoil with its
// key as it does.
type spoiler struct {
	hotlimit.Refunder
	spoil func(key string)
}

func (s spoiler) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	d := s.Refunder.Take(key, 0)
	if n > 0 {
		s.spoil(key)
		d.Allowed, d.RetryAfter = false, time.Second
	}
	return d, hotlimit.Receipt{}
}

func (s spoiler) Take(key string, n int) hotlimit.Decision {
	d, _ := s.TakeReceipt(key, n)
	return d
}

// TestCompositeDenialGiveBackErrorIsBeside: when a composite's child on
// Redis that took a request cannot give it back in the denial's batch (its
// key of another type meanwhile), the composite's error holds that
// child's give-back error and its report's, beside the decision: no
// deciding error, as when the children give back and report one by one.
func TestCompositeDenialGiveBackErrorIsBeside(t *testing.T) {
	srv := redistest.Start(t)
	client := newClient(t, srv)
	build := func(prefix string, wrap func(*redislimit.Limiter) hotlimit.Limiter) *composite.Limiter {
		var kids []hotlimit.Limiter
		var spoiled *redislimit.Limiter
		for _, c := range []hotlimit.Config{
			{Algorithm: hotlimit.TokenBucket, Limit: 4, Window: time.Hour},
			{Algorithm: hotlimit.FixedWindow, Limit: 6, Window: time.Hour},
		} {
			l := newExact(t, client, c, frozenClock(), redislimit.WithPrefix(prefix), redislimit.WithFailPolicy(redislimit.FailOpen))
			spoiled = l
			kids = append(kids, wrap(l))
		}
		mem, err := service.NewLimiter(hotlimit.Config{Algorithm: hotlimit.SlidingCounter, Limit: 9, Window: time.Hour})
		require.NoError(t, err)
		kids = append(kids, spoiler{mem.(hotlimit.Refunder), func(key string) {
			k := spoiled.RedisKey(key)
			require.NoError(t, client.Del(context.Background(), k).Err())
			require.NoError(t, client.LPush(context.Background(), k, "x").Err())
		}})
		l, err := composite.New(kids...)
		require.NoError(t, err)
		return l
	}
	batched := build("all:", func(l *redislimit.Limiter) hotlimit.Limiter { return l })
	single := build("one:", func(l *redislimit.Limiter) hotlimit.Limiter { return oneByOne{ContextRefunder: l, config: l.Config()} })
	ctx := context.Background()
	bd, br, berr := batched.TakeReceiptContext(ctx, "zed", 2)
	sd, sr, serr := single.TakeReceiptContext(ctx, "zed", 2)
	assert.False(t, bd.Allowed)
	assert.Equal(t, sd, bd)
	assert.Equal(t, sr, br)
	require.Error(t, serr)
	require.Error(t, berr)
	assert.Equal(t, serr.Error(), berr.Error())
	assert.Equal(t, 2, strings.Count(berr.Error(), "WRONGTYPE"), "the give-back's error and the report's: %v", berr)
	assert.NoError(t, composite.DecidingError(serr), "one by one: the denier decided")
	assert.NoError(t, composite.DecidingError(berr), "the denier decided")
}
