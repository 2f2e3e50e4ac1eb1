package service_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// remainingOf returns what the limit c of the pair's rule holds, as TakeEach
// reports it without taking.
func remainingOf(t *testing.T, s *service.Service, user, api string, c hotlimit.Config) int {
	t.Helper()
	_, each, _ := s.TakeEach(context.Background(), user, api, 0, nil)
	for _, ld := range each {
		if ld.Config == c {
			return ld.Decision.Remaining
		}
	}
	require.Failf(t, "limit not in the rule", "%v", c)
	return 0
}

// TestReplaceBetweenATakeAndItsRefundKeepsTheLimitsState: under a rule of
// two limits, the first (x, per pair) has taken and the second (y, per
// user, spent) is about to deny when a Replace lands that keeps x: the
// rule itself unchanged, or the rule removed so that the pair falls to a
// default of x alone. The denial gives x back to the limiter that took,
// which the new rules use: the pair keeps its state under x, all of it.
// (A Replace that changes x is TestReplaceBetweenATakeAndItsRefundToADroppedLimit.)
func TestReplaceBetweenATakeAndItsRefundKeepsTheLimitsState(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	other := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 9, Window: time.Minute}
	a := service.Rules{Default: one(x), Users: map[string]service.Limits{"u": {x, y}}}
	for _, tc := range []struct {
		name string
		b    service.Rules
		rule string // the rule (u, e) falls under after
	}{
		{"same rule", service.Rules{Default: one(x), Users: map[string]service.Limits{"u": {x, y}}, APIs: map[string]service.Limits{"z": one(other)}}, "both"},
		{"rule removed", service.Rules{Default: one(x)}, "x alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := limitertest.NewGate(service.NewLimiter)
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(a, clock, hotlimit.WithFactory(g.Factory))
			require.NoError(t, err)
			require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")

			g.HoldNext(y)
			denied := make(chan hotlimit.Decision)
			go func() { denied <- s.Take("u", "e", 1) }()
			g.Entered(t) // x took for (u, e), y about to deny
			require.NoError(t, s.Replace(tc.b))
			g.Release()
			d := <-denied
			assert.False(t, d.Allowed, "y denies under a")

			lx := g.Only(t, x)
			assert.EqualValues(t, 1, lx.Refunded.Load(), "x's request given back, once")
			switch tc.rule {
			case "both":
				assert.Equal(t, 2, remainingOf(t, s, "u", "e", x), "x whole again under the new rules")
				assert.False(t, s.Allow("u", "e"), "y still spent")
			case "x alone":
				assert.Equal(t, 2, passes(s, "u", "e", 5), "x whole again under the new rules")
			}
		})
	}
}

// TestWaitAsleepWhileReplaceLowersTheLimit: a WaitN of 2 sleeps, denied
// by a limit of 3 with 1 left, while a Replace lowers the limit to 1. The
// next ask is under the new rules, which never pass 2 at once: the wait
// ends at once with ErrNeverPasses naming the new rule's bound, having
// slept once and counted nothing.
func TestWaitAsleepWhileReplaceLowersTheLimit(t *testing.T) {
	three := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Hour}
	oneReq := three
	oneReq.Limit = 1
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(three, clock)
	require.NoError(t, err)
	require.Equal(t, 2, passes(s, "u", "a", 2))
	slept := 0
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		slept++
		require.NoError(t, s.Replace(service.Rules{Default: one(oneReq)}))
		now.Add(int64(d))
		return nil
	})
	err = s.WaitN(context.Background(), "u", "a", 2, sleep)
	require.ErrorIs(t, err, hotlimit.ErrNeverPasses)
	assert.Contains(t, err.Error(), "more than ever pass at once: at most 1", "the new rule's bound")
	assert.Equal(t, 1, slept)
	assert.Equal(t, 1, s.Take("u", "a", 0).Remaining, "the new limit counted nothing")
}

// TestWaitAsleepWhileCloseRuns: a Wait sleeps while Close closes the rule's
// limiter. Close does not end it: the service still decides after Close,
// with the same limiter, closed, which counts the request that passes.
func TestWaitAsleepWhileCloseRuns(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	g := limitertest.NewGate(service.NewLimiter)
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(x, clock, hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "a"))
	var slept []time.Duration
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		require.NoError(t, s.Close())
		now.Add(int64(d))
		return nil
	})
	require.NoError(t, s.Wait(context.Background(), "u", "a", sleep))
	assert.Equal(t, []time.Duration{time.Minute}, slept, "one sleep, to the next window")
	lx := g.Only(t, x)
	assert.True(t, lx.Closed.Load())
	assert.EqualValues(t, 1, lx.TakesClosed.Load(), "the ask after the sleep went to the closed limiter")
	assert.False(t, s.Allow("u", "a"), "which counted it")
}

// TestTakeWithHeldWhileReplaceInstallsItsLimit: a TakeWith of a plan waits
// inside the plan's limiter while a Replace installs rules of the same
// limit. The plan's call counts in the plan's own limiter, apart from the
// rules', as TakeWith documents: the rules' limit starts whole, and the
// plan's next call is denied.
func TestTakeWithHeldWhileReplaceInstallsItsLimit(t *testing.T) {
	plan := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
	def := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Minute}
	g := limitertest.NewGate(service.NewLimiter)
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(def, clock, hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)

	g.HoldNext(plan)
	passed := make(chan hotlimit.Decision)
	go func() {
		d, err := s.TakeWith("u", "e", plan, 1)
		assert.NoError(t, err)
		passed <- d
	}()
	g.Entered(t)
	require.NoError(t, s.Replace(service.Rules{Default: one(plan)}))
	g.Release()
	assert.True(t, (<-passed).Allowed)

	require.Len(t, g.Limiters(plan), 2, "the plan's limiter and the rules'")
	assert.True(t, s.Allow("u", "e"), "the rules' limit is apart: whole")
	d, err := s.TakeWith("u", "e", plan, 1)
	require.NoError(t, err)
	assert.False(t, d.Allowed, "the plan's quota carried across the Replace")
}

// TestCloseWhileADecisionIsHeld: Close runs while a decision has chosen its
// limiter and not yet asked it. The decision then asks the closed limiter,
// as Close documents (the service still decides after Close), and answers
// what it decides: for a rule of one limit, the request passes and is
// counted; for a rule of two whose second denies, the first's take is
// given back to it, closed, and the pair keeps all of it.
func TestCloseWhileADecisionIsHeld(t *testing.T) {
	t.Run("one limit", func(t *testing.T) {
		x := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}
		g := limitertest.NewGate(service.NewLimiter)
		clock, _ := frozen(int64(time.Hour))
		s, err := service.New(x, clock, hotlimit.WithFactory(g.Factory))
		require.NoError(t, err)

		g.HoldNext(x)
		passed := make(chan bool)
		go func() { passed <- s.Allow("u", "e") }()
		g.Entered(t)
		require.NoError(t, s.Close())
		lx := g.Only(t, x)
		require.True(t, lx.Closed.Load(), "Close closed the limiter the decision holds")
		g.Release()
		assert.True(t, <-passed, "the closed limiter's answer")
		assert.EqualValues(t, 1, lx.TakesClosed.Load(), "asked once closed")
		assert.False(t, s.Allow("u", "e"), "it counted the request")
	})
	t.Run("two limits, the second denies", func(t *testing.T) {
		x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
		y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
		g := limitertest.NewGate(service.NewLimiter)
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{x, y}}, clock, hotlimit.WithFactory(g.Factory))
		require.NoError(t, err)
		require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")

		g.HoldNext(y)
		denied := make(chan hotlimit.Decision)
		go func() { denied <- s.Take("u", "e", 1) }()
		g.Entered(t) // x took, y about to deny
		require.NoError(t, s.Close())
		g.Release()
		assert.False(t, (<-denied).Allowed)
		lx := g.Only(t, x)
		assert.EqualValues(t, 1, lx.RefundsClosed.Load(), "x's take given back once closed")
		assert.Equal(t, 2, remainingOf(t, s, "u", "e", x), "x whole")
	})
}

// TestWatchFileReloadBetweenATakeAndItsRefund: under a rule of two limits,
// the first (x) has taken and the second (y, spent) is about to deny when
// WatchFile installs the file's rules, x alone, at its first read. The
// denial gives x back to the limiter that took, which the file's rules
// use: the pair keeps all of x under them.
func TestWatchFileReloadBetweenATakeAndItsRefund(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
	g := limitertest.NewGate(service.NewLimiter)
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{x, y}}, clock, hotlimit.WithFactory(g.Factory))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")
	data, err := service.Rules{Default: one(x)}.MarshalJSON()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	g.HoldNext(y)
	denied := make(chan hotlimit.Decision)
	go func() { denied <- s.Take("u", "e", 1) }()
	g.Entered(t) // x took, y about to deny
	ctx, cancel := context.WithCancel(context.Background())
	reloaded, watching := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(watching)
		s.WatchFileWith(ctx, path, service.WatchOptions{Interval: time.Hour,
			OnReload: func(service.Reload) { close(reloaded) },
			OnError:  func(err error) { t.Error(err) }})
	}()
	select {
	case <-reloaded:
	case <-time.After(10 * time.Second):
		cancel()
		require.FailNow(t, "the file was not loaded")
	}
	cancel()
	<-watching
	require.Equal(t, one(x), s.Rules().Default, "the file's rules are in force")
	g.Release()
	assert.False(t, (<-denied).Allowed, "y denies under the rules the request started with")
	assert.EqualValues(t, 1, g.Only(t, x).Refunded.Load(), "x's request given back, once")
	assert.Equal(t, 2, passes(s, "u", "e", 5), "x whole under the file's rules")
}
