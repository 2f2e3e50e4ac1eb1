package service_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// holder is a factory of limiters that hold resources (they have Close, as
// redislimit's do) and that can stop one decision inside the limiter, after
// the service chose it and before it counts, until the test lets it go: so
// that a Replace or a Close lands at that exact step. Each limiter records
// what it was asked and given back once closed.
type holder struct {
	mu     sync.Mutex
	built  map[hotlimit.Config][]*holding
	hold   atomic.Pointer[hotlimit.Config] // the next take of this limit waits
	inside chan struct{}                   // a held take has entered its limiter
	goOn   chan struct{}                   // lets it go on
}

func newHolder() *holder {
	return &holder{built: map[hotlimit.Config][]*holding{}, inside: make(chan struct{}), goOn: make(chan struct{})}
}

func (h *holder) factory(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
	l, err := service.NewLimiter(c, opts...)
	if err != nil {
		return nil, err
	}
	hl := &holding{Refunder: l.(hotlimit.Refunder), h: h, c: c}
	h.mu.Lock()
	h.built[c] = append(h.built[c], hl)
	h.mu.Unlock()
	return hl, nil
}

// holdNext makes the next take of c wait inside its limiter (the one built
// for c without its scope, as the service builds it): the test then waits
// for it with entered, and closes goOn to let it go.
func (h *holder) holdNext(c hotlimit.Config) {
	c.Scope = hotlimit.PerPair
	h.hold.Store(&c)
}

// entered waits until the held take has entered its limiter.
func (h *holder) entered(t *testing.T) {
	t.Helper()
	select {
	case <-h.inside:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no take was held")
	}
}

// limiters returns the limiters built for c, oldest first.
func (h *holder) limiters(c hotlimit.Config) []*holding {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*holding(nil), h.built[c]...)
}

// only returns the one limiter built for c (without its scope).
func (h *holder) only(t *testing.T, c hotlimit.Config) *holding {
	t.Helper()
	c.Scope = hotlimit.PerPair
	ls := h.limiters(c)
	require.Len(t, ls, 1, "one limiter of %v", c)
	return ls[0]
}

type holding struct {
	hotlimit.Refunder
	h      *holder
	c      hotlimit.Config
	closed atomic.Bool
	// Requests given back, and takes and give-backs made once closed.
	refunded, takesClosed, refundsClosed atomic.Int64
}

func (l *holding) Close() error { l.closed.Store(true); return nil }

func (l *holding) wait() {
	if p := l.h.hold.Load(); p != nil && *p == l.c && l.h.hold.CompareAndSwap(p, nil) {
		l.h.inside <- struct{}{}
		<-l.h.goOn
	}
	if l.closed.Load() {
		l.takesClosed.Add(1)
	}
}

func (l *holding) Allow(key string) bool { l.wait(); return l.Refunder.Allow(key) }

func (l *holding) Take(key string, n int) hotlimit.Decision {
	l.wait()
	return l.Refunder.Take(key, n)
}

func (l *holding) TakeReceipt(key string, n int) (hotlimit.Decision, hotlimit.Receipt) {
	l.wait()
	return l.Refunder.TakeReceipt(key, n)
}

func (l *holding) Refund(key string, r hotlimit.Receipt) {
	l.refunded.Add(int64(r.N))
	if l.closed.Load() {
		l.refundsClosed.Add(1)
	}
	l.Refunder.Refund(key, r)
}

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
			h := newHolder()
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(a, clock, hotlimit.WithFactory(h.factory))
			require.NoError(t, err)
			require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")

			h.holdNext(y)
			denied := make(chan hotlimit.Decision)
			go func() { denied <- s.Take("u", "e", 1) }()
			h.entered(t) // x took for (u, e), y about to deny
			require.NoError(t, s.Replace(tc.b))
			close(h.goOn)
			d := <-denied
			assert.False(t, d.Allowed, "y denies under a")

			lx := h.only(t, x)
			assert.EqualValues(t, 1, lx.refunded.Load(), "x's request given back, once")
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
	h := newHolder()
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(x, clock, hotlimit.WithFactory(h.factory))
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
	lx := h.only(t, x)
	assert.True(t, lx.closed.Load())
	assert.EqualValues(t, 1, lx.takesClosed.Load(), "the ask after the sleep went to the closed limiter")
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
	h := newHolder()
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(def, clock, hotlimit.WithFactory(h.factory))
	require.NoError(t, err)

	h.holdNext(plan)
	passed := make(chan hotlimit.Decision)
	go func() {
		d, err := s.TakeWith("u", "e", plan, 1)
		assert.NoError(t, err)
		passed <- d
	}()
	h.entered(t)
	require.NoError(t, s.Replace(service.Rules{Default: one(plan)}))
	close(h.goOn)
	assert.True(t, (<-passed).Allowed)

	require.Len(t, h.limiters(plan), 2, "the plan's limiter and the rules'")
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
		h := newHolder()
		clock, _ := frozen(int64(time.Hour))
		s, err := service.New(x, clock, hotlimit.WithFactory(h.factory))
		require.NoError(t, err)

		h.holdNext(x)
		passed := make(chan bool)
		go func() { passed <- s.Allow("u", "e") }()
		h.entered(t)
		require.NoError(t, s.Close())
		lx := h.only(t, x)
		require.True(t, lx.closed.Load(), "Close closed the limiter the decision holds")
		close(h.goOn)
		assert.True(t, <-passed, "the closed limiter's answer")
		assert.EqualValues(t, 1, lx.takesClosed.Load(), "asked once closed")
		assert.False(t, s.Allow("u", "e"), "it counted the request")
	})
	t.Run("two limits, the second denies", func(t *testing.T) {
		x := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
		y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Minute, Scope: hotlimit.PerUser}
		h := newHolder()
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: service.Limits{x, y}}, clock, hotlimit.WithFactory(h.factory))
		require.NoError(t, err)
		require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")

		h.holdNext(y)
		denied := make(chan hotlimit.Decision)
		go func() { denied <- s.Take("u", "e", 1) }()
		h.entered(t) // x took, y about to deny
		require.NoError(t, s.Close())
		close(h.goOn)
		assert.False(t, (<-denied).Allowed)
		lx := h.only(t, x)
		assert.EqualValues(t, 1, lx.refundsClosed.Load(), "x's take given back once closed")
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
	h := newHolder()
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{x, y}}, clock, hotlimit.WithFactory(h.factory))
	require.NoError(t, err)
	require.True(t, s.Allow("u", "spend"), "spends the user's one request of y")
	data, err := service.Rules{Default: one(x)}.MarshalJSON()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, data, 0o600))

	h.holdNext(y)
	denied := make(chan hotlimit.Decision)
	go func() { denied <- s.Take("u", "e", 1) }()
	h.entered(t) // x took, y about to deny
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
	close(h.goOn)
	assert.False(t, (<-denied).Allowed, "y denies under the rules the request started with")
	assert.EqualValues(t, 1, h.only(t, x).refunded.Load(), "x's request given back, once")
	assert.Equal(t, 2, passes(s, "u", "e", 5), "x whole under the file's rules")
}
