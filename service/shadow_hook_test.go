package service_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/internal/limitertest"
	"github.com/hotlimit/hotlimit/service"
)

// shadowCall is one call of a shadow hook.
type shadowCall struct {
	user, api string
	e         hotlimit.Event
}

// shadowCalls records a shadow hook's calls, and the observer's events, in
// the order they came: on one goroutine, the hook's call right after the
// observer's event it repeats.
type shadowCalls struct {
	calls  []shadowCall
	events []hotlimit.Event
}

func (r *shadowCalls) hook(user, api string, e hotlimit.Event) {
	r.calls = append(r.calls, shadowCall{user, api, e})
}

func (r *shadowCalls) Observe(e hotlimit.Event) { r.events = append(r.events, e) }

// TestShadowHookNamesWhoWouldBeDenied: a rule of an enforced limit (6 per
// pair) and a shadow one (3 per user), and an API whose one limit is in
// shadow mode (2 per pair), under a frozen clock, asked through every way of
// deciding in turn: the hook hears, with the user and api asked, exactly the
// requests that a shadow limit would have turned away and that passed; not
// those under the shadow limit, not another user's, and not those that the
// enforced limit denied.
func TestShadowHookNamesWhoWouldBeDenied(t *testing.T) {
	perUser := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second, Scope: hotlimit.PerUser, Shadow: true}
	enforced := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 6, Window: time.Second}
	newAPI := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 2, Window: time.Second, Shadow: true}
	clock, _ := frozen(int64(time.Hour))
	var rec shadowCalls
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{enforced, perUser},
		APIs:    map[string]service.Limits{"GET /new": {newAPI}},
	}, clock, service.WithShadowHook(rec.hook))
	require.NoError(t, err)

	ctx := context.Background()
	ways := []func(user, api string) bool{
		func(u, a string) bool { return s.Allow(u, a) },
		func(u, a string) bool { return s.Take(u, a, 1).Allowed },
		func(u, a string) bool { d, _ := s.TakePolicy(u, a, 1); return d.Allowed },
		func(u, a string) bool { d, _ := s.TakeContext(ctx, u, a, 1); return d.Allowed },
		func(u, a string) bool { d, _, _ := s.TakePolicyContext(ctx, u, a, 1); return d.Allowed },
		func(u, a string) bool { d, _, _ := s.TakeEach(ctx, u, a, 1, nil); return d.Allowed },
		func(u, a string) bool {
			// A denial's wait outlasts the deadline: it fails at once.
			short, cancel := context.WithTimeout(ctx, time.Millisecond)
			defer cancel()
			return s.Wait(short, u, a) == nil
		},
	}
	asked := 0
	ask := func(user, api string, times int) (passed int) {
		for range times {
			if ways[asked%len(ways)](user, api) {
				passed++
			}
			asked++
		}
		return passed
	}

	for round := range ways { // each round starts with another way
		asked, rec.calls = round, nil
		alice, bob := "alice"+strings.Repeat("!", round), "bob"+strings.Repeat("!", round)
		require.Equal(t, 6, ask(alice, "GET /a", 8), "way %d: the enforced limit alone denies", round)
		require.Equal(t, 2, ask(bob, "GET /a", 2), "way %d", round)
		require.Equal(t, 4, ask(alice, "GET /new", 4), "way %d: a rule of one shadow limit denies nobody", round)
		require.Len(t, rec.calls, 3+2, "way %d: alice's 4th to 6th to GET /a, and her 3rd and 4th to GET /new", round)
		for i, c := range rec.calls {
			assert.Equal(t, alice, c.user, "way %d, call %d", round, i)
			assert.Equal(t, hotlimit.OutcomeShadowDenied, c.e.Outcome, "way %d, call %d", round, i)
			assert.True(t, c.e.Decision.Allowed, "way %d, call %d: the request passed", round, i)
			assert.Equal(t, 1, c.e.N, "way %d, call %d", round, i)
		}
		for _, c := range rec.calls[:3] {
			assert.Equal(t, "GET /a", c.api)
			assert.Equal(t, "default", c.e.Rule)
			assert.Equal(t, perUser, c.e.Policy, "the limit in shadow mode that would have denied")
		}
		for _, c := range rec.calls[3:] {
			assert.Equal(t, "GET /new", c.api)
			assert.Equal(t, `apis["GET /new"]`, c.e.Rule)
			assert.Equal(t, newAPI, c.e.Policy)
		}
	}
}

// TestShadowHookHearsEveryShadowDenialTheObserverHears runs random rules
// (1 to 4 limits of random algorithms, scopes and shadow modes) through
// random requests, each asked through a random way of deciding, TakeWith
// under a random limit included, with user names too long for a key built
// on the stack among them: every event the observer hears as a shadow
// denial is followed at once by one call of the hook with that very event
// and the request's user and api, and the hook is called for nothing else.
func TestShadowHookHearsEveryShadowDenialTheObserverHears(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	shadowDenials := 0
	for range 200 {
		var rec shadowCalls
		clock, now := frozen(int64(time.Hour))
		rule := randomRule(rng)
		s, err := service.NewFromRules(service.Rules{Default: rule}, clock,
			hotlimit.WithObserver(&rec), service.WithShadowHook(rec.hook))
		require.NoError(t, err)
		plan := randomLimit(rng)
		ctx := context.Background()
		users := []string{"u", "v", strings.Repeat("w", 300)}
		for range 40 {
			user, api := users[rng.IntN(len(users))], []string{"a", "b"}[rng.IntN(2)]
			n := rng.IntN(4) - 1
			events, calls := len(rec.events), len(rec.calls)
			switch rng.IntN(7) {
			case 0:
				s.Allow(user, api)
			case 1:
				s.Take(user, api, n)
			case 2:
				s.TakePolicy(user, api, n)
			case 3:
				_, _ = s.TakeContext(ctx, user, api, n)
			case 4:
				_, _, _ = s.TakeEach(ctx, user, api, n, nil)
			case 5:
				_, _ = s.TakeWith(user, api, plan, n)
			case 6:
				short, cancel := context.WithTimeout(ctx, time.Millisecond)
				_ = s.WaitN(short, user, api, max(n, 0))
				cancel()
			}
			var want []shadowCall
			for _, e := range rec.events[events:] {
				if e.Outcome == hotlimit.OutcomeShadowDenied {
					want = append(want, shadowCall{user, api, e})
				}
			}
			got := rec.calls[calls:]
			if len(got) == 0 {
				got = nil
			}
			require.Equal(t, want, got, "rule %v, plan %v", rule, plan)
			shadowDenials += len(want)
			now.Add(int64(rng.IntN(400)) * int64(time.Millisecond))
		}
	}
	assert.Greater(t, shadowDenials, 100, "the random rules denied in shadow mode often enough to test")
}

// TestShadowHookIsNotCalledWithoutAShadowLimit: a rule with no limit in
// shadow mode never calls the hook, denying or not, and its Allow allocates
// nothing with the hook set; nor does a shadow denial's call of the hook.
func TestShadowHookIsNotCalledWithoutAShadowLimit(t *testing.T) {
	var calls atomic.Int64
	hook := service.WithShadowHook(func(string, string, hotlimit.Event) { calls.Add(1) })
	clock, _ := frozen(int64(time.Hour))
	enforced := cfg(hotlimit.TokenBucket, 2)
	shadow := cfg(hotlimit.FixedWindow, 1)
	shadow.Shadow = true
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{enforced},
		APIs: map[string]service.Limits{"shadowed": {shadow}}}, clock, hook)
	require.NoError(t, err)
	assert.Equal(t, 2, passes(s, "u", "a", 5))
	assert.Zero(t, calls.Load(), "no limit in shadow mode")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("u", "a") }))
	assert.Equal(t, 1, passes(s, "u", "shadowed", 1))
	assert.Zero(t, calls.Load(), "under the shadow limit")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("u", "shadowed") }), "a shadow denial and its hook")
	assert.EqualValues(t, 101, calls.Load(), "every later request would have been denied")
}

// TestShadowHookOptions: the last WithShadowHook counts, and a nil function
// turns the hook off.
func TestShadowHookOptions(t *testing.T) {
	shadow := cfg(hotlimit.SlidingLog, 1)
	shadow.Shadow = true
	var first, second atomic.Int64
	count := func(n *atomic.Int64) func(string, string, hotlimit.Event) {
		return func(string, string, hotlimit.Event) { n.Add(1) }
	}
	s, err := service.New(shadow, service.WithShadowHook(count(&first)), service.WithShadowHook(count(&second)))
	require.NoError(t, err)
	assert.Equal(t, 3, passes(s, "u", "a", 3))
	assert.Zero(t, first.Load())
	assert.EqualValues(t, 2, second.Load())

	s, err = service.New(shadow, service.WithShadowHook(count(&first)), service.WithShadowHook(nil))
	require.NoError(t, err)
	assert.Equal(t, 3, passes(s, "u", "a", 3))
	assert.Zero(t, first.Load(), "turned off")
}

// TestShadowHookPanicLeavesTheRequestCounted: a panic of the hook reaches
// the caller, and the request it was called for stays counted.
func TestShadowHookPanicLeavesTheRequestCounted(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	enforced := cfg(hotlimit.FixedWindow, 3)
	shadow := cfg(hotlimit.TokenBucket, 1)
	shadow.Shadow, shadow.Scope = true, hotlimit.PerUser
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{enforced, shadow}}, clock,
		service.WithShadowHook(func(string, string, hotlimit.Event) { panic("hook") }))
	require.NoError(t, err)
	assert.True(t, s.Allow("u", "a"))
	assert.PanicsWithValue(t, "hook", func() { s.Allow("u", "a") })
	assert.PanicsWithValue(t, "hook", func() { s.Take("u", "a", 1) })
	assert.False(t, s.Allow("u", "a"), "the three requests were counted by the enforced limit")
}

// TestShadowHookEventUnderAllowIsTheObserversEvent: the hook hears the
// Event the observer hears; under Allow, a rule of a limit in shadow mode
// that the hook hears of is asked as Take asks it, so its Event carries the
// limit's ResetAfter as Take's does (another rule's, under Allow, does not:
// its limiter reports Remaining with its Allow).
func TestShadowHookEventUnderAllowIsTheObserversEvent(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Shadow: true}
	var rec shadowCalls
	s, err := service.New(shadow, clock, hotlimit.WithObserver(&rec), service.WithShadowHook(rec.hook))
	require.NoError(t, err)
	require.Equal(t, 3, passes(s, "u", "a", 3))
	require.True(t, s.Take("u", "a", 1).Allowed)
	require.Len(t, rec.calls, 2, "the 3rd and 4th requests")
	allowed := hotlimit.Decision{Allowed: true, Limit: 2, Remaining: 0, ResetAfter: time.Minute}
	assert.Equal(t, allowed, rec.calls[0].e.Decision, "under Allow: the limit's ResetAfter")
	assert.Equal(t, rec.events[2], rec.calls[0].e, "the observer's Event")
	assert.Equal(t, allowed, rec.calls[1].e.Decision, "under Take: the limit's ResetAfter")
	assert.Equal(t, rec.events[3], rec.calls[1].e, "the observer's Event")
}

// TestShadowHookHearsALimitThatCouldNotDecide: the hook hears what the
// observer hears as a shadow denial, including a limit in shadow mode
// whose backend is down and whose failure policy denies (enforced, it
// would have denied the request too), and a request that ended while a
// limit could not decide, which the rule gave back and its caller does not
// serve: the shadow limit would have denied it all the same. The caller's
// error says either; the hook hears the Event alone.
func TestShadowHookHearsALimitThatCouldNotDecide(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	enforced := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Second}
	onBackend := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Shadow: true}
	var rec shadowCalls
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{enforced, onBackend}}, clock,
		limitertest.OnBackend(onBackend, downClosed{5}, service.NewLimiter),
		hotlimit.WithObserver(&rec), service.WithShadowHook(rec.hook))
	require.NoError(t, err)
	d, err := s.TakeContext(context.Background(), "u", "a", 1)
	require.ErrorIs(t, err, errDown)
	assert.True(t, d.Allowed)
	require.Len(t, rec.calls, 1, "the failure policy's denial")
	assert.Equal(t, rec.events[0], rec.calls[0].e)
	assert.Equal(t, onBackend, rec.calls[0].e.Policy)

	rec = shadowCalls{}
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second, Shadow: true}
	remote := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	s, err = service.NewFromRules(service.Rules{Default: service.Limits{shadow, remote}}, clock,
		limitertest.OnBackend(remote, &limitertest.DownOpen{Err: errBackend}, service.NewLimiter),
		hotlimit.WithObserver(&rec), service.WithShadowHook(rec.hook))
	require.NoError(t, err)
	_, err = s.TakeContext(context.Background(), "u", "a", 1)
	require.ErrorIs(t, err, errBackend)
	require.Empty(t, rec.calls, "under the shadow limit: counted there")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	d, err = s.TakeContext(ended, "u", "a", 1)
	require.ErrorIs(t, err, context.Canceled, "given back, not to be served")
	assert.True(t, d.Allowed)
	require.Len(t, rec.calls, 1, "the shadow limit would have denied it")
	assert.Equal(t, rec.events[1], rec.calls[0].e)
	assert.Equal(t, shadow, rec.calls[0].e.Policy)
}

// TestShadowHookIsNotCalledWhenTheObserverPanics: the hook runs after the
// observer, so an observer's panic, which reaches the caller with the
// request counted, leaves the hook uncalled for that request.
func TestShadowHookIsNotCalledWhenTheObserverPanics(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second, Shadow: true}
	enforced := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}
	var calls atomic.Int64
	for _, rule := range []service.Limits{{shadow}, {enforced, shadow}} {
		calls.Store(0)
		s, err := service.NewFromRules(service.Rules{Default: rule}, clock,
			hotlimit.WithObserver(hotlimit.ObserverFunc(func(e hotlimit.Event) {
				if e.Outcome == hotlimit.OutcomeShadowDenied {
					panic("observer")
				}
			})),
			service.WithShadowHook(func(string, string, hotlimit.Event) { calls.Add(1) }))
		require.NoError(t, err)
		require.True(t, s.Allow("u", "a"))
		assert.PanicsWithValue(t, "observer", func() { s.Allow("u", "a") }, "%v", rule)
		assert.PanicsWithValue(t, "observer", func() { s.Take("u", "a", 1) }, "%v", rule)
		assert.Zero(t, calls.Load(), "%v", rule)
		if len(rule) > 1 {
			assert.Equal(t, 0, s.Take("u", "a", 0).Remaining, "%v: the three requests were counted", rule)
		}
	}
}

// TestShadowHookCostsRulesWithoutAShadowLimitNothing: a rule with no limit
// in shadow mode pays nothing for the hook, at a reload either: rules of
// 201 entries, none in shadow mode, are built with the allocations they
// take without the hook, but the option's own, once per reload (the Events'
// Sources are built for the rules the hook may hear of, not for every
// entry, 3 allocations each).
func TestShadowHookCostsRulesWithoutAShadowLimitNothing(t *testing.T) {
	rules := service.Rules{Default: service.Limits{cfg(hotlimit.TokenBucket, 5)}, Pairs: map[service.Pair]service.Limits{}}
	for i := range 200 {
		rules.Pairs[service.Pair{User: strconv.Itoa(i), API: "a"}] = service.Limits{cfg(hotlimit.FixedWindow, 1+i%3), cfg(hotlimit.GCRA, 9)}
	}
	reload := func(opts ...hotlimit.Option) float64 {
		s, err := service.NewFromRules(rules, opts...)
		require.NoError(t, err)
		return testing.AllocsPerRun(20, func() { require.NoError(t, s.Replace(rules)) })
	}
	hook := service.WithShadowHook(func(string, string, hotlimit.Event) {})
	without, with := reload(), reload(hook)
	assert.LessOrEqual(t, with-without, 1.0, "%v allocations without the hook, %v with it", without, with)
}
