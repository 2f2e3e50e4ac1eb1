package service_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// counting is an observer that counts events by rule, outcome and policy,
// and checks each event against the decision it reports.
type counting struct {
	mu     sync.Mutex
	counts map[string]int
	bad    []string
}

func newCounting() *counting { return &counting{counts: map[string]int{}} }

func (c *counting) Observe(e hotlimit.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[e.Rule+" "+e.Outcome.String()]++
	c.counts[e.Rule+" "+e.Outcome.String()+" "+e.Policy.String()]++
	if e.Outcome == hotlimit.OutcomeShadowDenied && !e.Decision.Allowed {
		c.bad = append(c.bad, fmt.Sprintf("%+v: a shadow denial the caller did not pass", e))
	}
	if (e.Outcome == hotlimit.OutcomeDenied) == e.Decision.Allowed {
		c.bad = append(c.bad, fmt.Sprintf("%+v: outcome and decision disagree", e))
	}
}

func (c *counting) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

func TestObserverCountsEqualTheDecisions(t *testing.T) {
	for _, a := range algorithms {
		t.Run(a.String(), func(t *testing.T) {
			obs := newCounting()
			clock, _ := frozen(int64(time.Hour))
			rules := service.Rules{
				Default: service.Limits{cfg(a, 10)},
				APIs:    map[string]service.Limits{"GET /pay": {cfg(a, 7), {Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Minute, Scope: hotlimit.PerUser}}},
			}
			s, err := service.NewFromRules(rules, clock, hotlimit.WithObserver(obs))
			require.NoError(t, err)
			var passed, denied [2]atomic.Int64
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 40 {
						api := []string{"GET /", "GET /pay"}[(g+i)%2]
						var ok bool
						if i%3 == 0 {
							ok = s.Take("u", api, 1).Allowed
						} else {
							ok = s.Allow("u", api)
						}
						if ok {
							passed[(g+i)%2].Add(1)
						} else {
							denied[(g+i)%2].Add(1)
						}
					}
				})
			}
			wg.Wait()
			require.Empty(t, obs.bad)
			// Frozen clock: each rule passes exactly its tightest limit, and
			// each Remaining value is reported once, so exactly those at most
			// 20% of the limit are near it.
			assert.EqualValues(t, 10, passed[0].Load())
			assert.EqualValues(t, 5, passed[1].Load())
			assert.Equal(t, 10-3, obs.get("default allowed"), "Remaining 9..3")
			assert.Equal(t, 3, obs.get("default near_limit"), "Remaining 2, 1, 0")
			assert.EqualValues(t, denied[0].Load(), obs.get("default denied"))
			assert.Equal(t, 5, obs.get(`apis["GET /pay"] allowed`)+obs.get(`apis["GET /pay"] near_limit`))
			assert.EqualValues(t, denied[1].Load(), obs.get(`apis["GET /pay"] denied`))
			// Every denial is the per-user limit's, once it is spent, but
			// for those that found the per-pair limit (7, asked first)
			// holding takes from others still in flight, about to be
			// given back because the per-user limit denies them: under
			// 16 goroutines a few may. Each is attributed to one limit.
			byUser := obs.get(`apis["GET /pay"] denied FixedWindow 5/1m0s per user`)
			byPair := obs.get(`apis["GET /pay"] denied ` + cfg(a, 7).String())
			assert.EqualValues(t, denied[1].Load(), byUser+byPair, "each denial is one limit's")
			assert.Positive(t, byUser, "the per-user limit denies")
		})
	}
}

func TestShadowLimitLetsEverythingThroughAndReportsWouldBeDenials(t *testing.T) {
	obs := newCounting()
	clock, now := frozen(int64(time.Hour))
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Shadow: true}
	s, err := service.New(shadow, clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	for i := range 10 {
		d, policy := s.TakePolicy("u", "a", 1)
		assert.True(t, d.Allowed, "request %d", i+1)
		assert.Zero(t, d.RetryAfter, "request %d", i+1)
		assert.Equal(t, shadow, policy)
	}
	assert.Equal(t, 7, obs.get("default shadow_denied"))
	assert.Equal(t, 3, obs.get("default allowed")+obs.get("default near_limit"))
	assert.Equal(t, 0, obs.get("default denied"))
	assert.True(t, s.Allow("u", "a"), "Allow too")
	assert.Equal(t, 8, obs.get("default shadow_denied"))
	assert.False(t, s.Take("u", "a", -1).Allowed, "a negative n stays a caller's bug")
	now.Add(int64(time.Minute))
	assert.Equal(t, 8, obs.get("default shadow_denied"), "a new window: nothing more would be denied yet")
}

func TestShadowLimitInARuleOfSeveral(t *testing.T) {
	obs := newCounting()
	clock, _ := frozen(int64(time.Hour))
	real := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Shadow: true}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{shadow, real}}, clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	for i := range 10 {
		d, policy := s.TakePolicy("u", "a", 1)
		require.True(t, d.Allowed, "request %d: only the real limit denies", i+1)
		assert.Equal(t, 10-1-i, d.Remaining, "request %d: the caller sees the real limit only", i+1)
		assert.Equal(t, real, policy)
	}
	for i := range 2 {
		d, policy := s.TakePolicy("u", "a", 1)
		assert.False(t, d.Allowed, "request %d", 11+i)
		assert.Equal(t, real, policy)
	}
	assert.Equal(t, 7, obs.get("default shadow_denied FixedWindow 3/1m0s shadow"), "requests 4 to 10")
	assert.Equal(t, 2, obs.get("default denied TokenBucket 10/1m0s"))
	assert.Equal(t, 3, obs.get("default allowed")+obs.get("default near_limit"))
}

func TestTakeWithOverridesThePolicyForOneCall(t *testing.T) {
	obs := newCounting()
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(cfg(hotlimit.FixedWindow, 100), clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 2, Window: time.Minute, Scope: hotlimit.PerUser}
	for i := range 4 {
		d, err := s.TakeWith("tenant", fmt.Sprint("api", i), plan, 1)
		require.NoError(t, err)
		assert.Equal(t, i < 2, d.Allowed, "call %d: the plan counts per user across apis", i+1)
	}
	assert.True(t, s.Allow("tenant", "api0"), "the rule's quota is apart")
	assert.Equal(t, 2, obs.get(service.OverrideRule+" denied"))

	_, err = s.TakeWith("u", "a", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 0, Window: time.Second}, 1)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	_, err = s.TakeWith("u", "a", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second, Scope: 9}, 1)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "service: TakeWith's limit GCRA 1/1s", "named as TakeWith's other errors name it")
	assert.ErrorContains(t, err, "Config.Scope Scope(9) is not a scope")
	d, err := s.TakeWith("u", "a", hotlimit.Config{Algorithm: hotlimit.Unlimited}, 1000)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, math.MaxInt, d.Remaining)
	quiet, err := service.New(cfg(hotlimit.FixedWindow, 100), clock)
	require.NoError(t, err)
	_, _ = quiet.TakeWith("tenant", "api0", plan, 1)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = quiet.TakeWith("tenant", "api0", plan, 1) }), "a Config seen before")
}

func TestUnlimitedRuleIsAnAllowList(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 1))
	require.NoError(t, s.ConfigureUser("partner", hotlimit.Config{Algorithm: hotlimit.Unlimited}))
	assert.Equal(t, 1000, passes(s, "partner", "any", 1000))
	assert.Equal(t, 1, passes(s, "someone", "any", 1000))
	assert.Equal(t, math.MaxInt, s.Take("partner", "any", 1).Remaining)
}

func TestAllowWithAnObserverDoesNotAllocate(t *testing.T) {
	var n atomic.Int64
	obs := hotlimit.ObserverFunc(func(hotlimit.Event) { n.Add(1) })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(cfg(hotlimit.TokenBucket, 1<<20), clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	s.Allow("u", "a")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("u", "a") }))
	assert.EqualValues(t, 102, n.Load())
}

// recording is an observer that keeps every event.
type recording struct {
	mu     sync.Mutex
	events []hotlimit.Event
}

func (r *recording) Observe(e hotlimit.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// TestObserverHearsOfAllowAsOfTake: on twin services, one asked with Allow
// and the other with Take(user, api, 1), the observers hear of the same
// decisions (rule, policy, outcome, n, Allowed, Limit and Remaining; Allow's
// durations are not computed), for every algorithm, with a limit enforced
// and in shadow mode, and with the near-limit and denied outcomes reached.
func TestObserverHearsOfAllowAsOfTake(t *testing.T) {
	all := []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog, hotlimit.Unlimited}
	for _, a := range all {
		for _, shadow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/shadow=%v", a, shadow), func(t *testing.T) {
				c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second, Shadow: shadow}
				if a == hotlimit.Unlimited {
					c = hotlimit.Config{Algorithm: a}
				}
				rules := service.Rules{Default: service.Limits{c}, Users: map[string]service.Limits{"u1": {c}}}
				clock, now := frozen(int64(time.Hour))
				var byAllow, byTake recording
				sa, err := service.NewFromRules(rules, clock, hotlimit.WithObserver(&byAllow))
				require.NoError(t, err)
				st, err := service.NewFromRules(rules, clock, hotlimit.WithObserver(&byTake))
				require.NoError(t, err)
				for i := range 60 {
					if i%25 == 24 {
						now.Add(int64(300 * time.Millisecond))
					}
					user := []string{"u0", "u1"}[i%2]
					assert.Equal(t, st.Take(user, "api", 1).Allowed, sa.Allow(user, "api"), "step %d", i)
				}
				require.Len(t, byAllow.events, 60)
				require.Len(t, byTake.events, 60)
				outcomes := map[hotlimit.Outcome]int{}
				for i, want := range byTake.events {
					got := byAllow.events[i]
					want.Decision.RetryAfter, want.Decision.ResetAfter = 0, 0
					got.Decision.RetryAfter, got.Decision.ResetAfter = 0, 0
					assert.Equal(t, want, got, "step %d", i)
					outcomes[want.Outcome]++
				}
				if a != hotlimit.Unlimited {
					assert.Positive(t, outcomes[hotlimit.OutcomeAllowed])
					assert.Positive(t, outcomes[hotlimit.OutcomeNearLimit])
					assert.Positive(t, outcomes[hotlimit.OutcomeDenied]+outcomes[hotlimit.OutcomeShadowDenied])
				}
			})
		}
	}
}

// BenchmarkObserver compares service Allow on a hot pair without an
// observer and with one that counts (one atomic add):
// benchstat -col /observer.
func BenchmarkObserver(b *testing.B) {
	for _, mode := range []string{"none", "counting"} {
		b.Run("observer="+mode, func(b *testing.B) {
			var n atomic.Int64
			opts := []hotlimit.Option{}
			if mode == "counting" {
				opts = append(opts, hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) { n.Add(1) })))
			}
			s, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond}, opts...)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				s.Allow("user", "GET /api")
			}
		})
	}
}

func TestTurningShadowModeOffKeepsTheLimitsState(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Shadow: true}
	s, err := service.New(shadow, clock)
	require.NoError(t, err)
	assert.Equal(t, 5, passes(s, "u", "a", 5), "shadow mode: everything passes")
	enforced := shadow
	enforced.Shadow = false
	require.NoError(t, s.Replace(service.Rules{Default: service.Limits{enforced}}))
	assert.Zero(t, passes(s, "u", "a", 5), "the 3 counted in shadow mode still count")
}

// counter is a counting observer as a metrics package writes one: a method
// that adds one.
type counter struct{ n atomic.Int64 }

func (c *counter) Observe(hotlimit.Event) { c.n.Add(1) }

// BenchmarkObserverRatio measures service Allow on a hot pair without an
// observer and with one that counts (one atomic add, in a method or in an
// ObserverFunc), in alternating blocks of calls (the order swapped every
// block) so that both see the same load on a busy machine, and reports the
// medians over the blocks of each one's ns per call and of their ratio
// within a block (counting/none): medians, so that a block in which the
// goroutine lost its CPU counts for nothing.
func BenchmarkObserverRatio(b *testing.B) {
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		for _, kind := range []string{"method", "func"} {
			b.Run(fmt.Sprintf("alg=%v/observer=%s", a, kind), func(b *testing.B) {
				c := hotlimit.Config{Algorithm: a, Limit: 1 << 16, Window: time.Millisecond}
				var n counter
				var obs hotlimit.Observer = &n
				if kind == "func" {
					obs = hotlimit.ObserverFunc(n.Observe)
				}
				none, err := service.New(c)
				require.NoError(b, err)
				counting, err := service.New(c, hotlimit.WithObserver(obs))
				require.NoError(b, err)
				const block = 256
				var noneNs, countingNs, ratios []float64
				calls := 0
				b.ReportAllocs()
				for i := 0; i < b.N; i += block {
					k := min(block, b.N-i)
					var t [3]time.Time
					for pass := range 2 {
						t[pass] = time.Now()
						s := none
						if (pass+i/block)%2 == 1 {
							s = counting
						}
						for range k {
							s.Allow("user", "GET /api")
						}
					}
					t[2] = time.Now()
					first, second := float64(t[1].Sub(t[0]))/float64(k), float64(t[2].Sub(t[1]))/float64(k)
					if (i/block)%2 == 1 {
						first, second = second, first
					}
					noneNs, countingNs, ratios = append(noneNs, first), append(countingNs, second), append(ratios, second/max(first, 1e-9))
					calls += k
				}
				b.StopTimer()
				require.EqualValues(b, calls, n.n.Load(), "the observer heard of every decision")
				b.ReportMetric(median(noneNs), "none-ns/call")
				b.ReportMetric(median(countingNs), "counting-ns/call")
				b.ReportMetric(median(ratios), "counting/none")
			})
		}
	}
}

// TestObservedAllowOfLongNames: names too long for a key on the stack take
// the pooled buffer, on the observed path too; the observer hears of every
// decision, and the limit holds.
func TestObservedAllowOfLongNames(t *testing.T) {
	var n counter
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(cfg(hotlimit.TokenBucket, 5), clock, hotlimit.WithObserver(&n))
	require.NoError(t, err)
	long := strings.Repeat("u", 300)
	assert.Equal(t, 5, passes(s, long, "GET /pay", 8))
	assert.Equal(t, 5, passes(s, long+"x", "GET /pay", 8), "another pair, its own quota")
	assert.EqualValues(t, 16, n.n.Load())
	assert.Equal(t, 2, s.Len())
}

// A limit and its own copy in shadow mode would share one limiter and one
// key (shadow mode is not part of the limiter), so every request would be
// counted twice and the shadow copy would deny the caller. Such a rule is
// rejected, in Go and in JSON, naming the entry.
func TestShadowCopyOfALimitInTheSameRuleIsRejected(t *testing.T) {
	real := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
	shadow := real
	shadow.Shadow = true
	perUser := real
	perUser.Scope, perUser.Shadow = hotlimit.PerUser, true
	for _, ls := range []service.Limits{{shadow, real}, {real, shadow}} {
		_, err := service.NewFromRules(service.Rules{Default: ls})
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", ls)
		assert.ErrorContains(t, err, "default[1]: the same limit as default[0]", "%v", ls)
		assert.ErrorContains(t, service.Rules{Default: ls}.Validate(), "default[1]: the same limit as default[0]", "%v", ls)
		assert.ErrorContains(t, err, "give the shadow limit another limit or window", "%v: the error says how to keep the two apart", ls)
	}
	_, err := service.LoadRules(strings.NewReader(`{"default":[` + tb1 + `],"apis":{"a":[` + tb1 +
		`,{"algorithm":"TokenBucket","limit":1,"window":"1s","shadow":true}]}}`))
	assert.ErrorContains(t, err, `apis["a"][1]: the same limit as apis["a"][0]`)

	// The same limit under another scope counts under other keys: it is
	// accepted, and the shadow copy never denies the caller.
	obs := newCounting()
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{real, perUser}}, clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	for i := range 3 {
		assert.Equal(t, i < 2, s.Allow("u", "a"), "request %d: the real limit alone decides", i+1)
	}
	assert.Equal(t, 1, obs.get("default denied"))
}

// TestRepeatedLimitErrorSpeaksOfShadowModeOnlyForAShadowCopy: the error of
// a limit that repeats another of its rule tells how to roll out a shadow
// copy only when one of the two is in shadow mode, and tells it also when
// the copy is one only under the service's burst (WithBurst), the burst
// spelled out in one of the two.
func TestRepeatedLimitErrorSpeaksOfShadowModeOnlyForAShadowCopy(t *testing.T) {
	real := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
	_, err := service.NewFromRules(service.Rules{Default: service.Limits{real, real}})
	assert.ErrorContains(t, err, "default[1]: the same limit as default[0]")
	assert.NotContains(t, err.Error(), "shadow", "neither is in shadow mode")

	spelled := real
	spelled.Burst = 5
	shadow := real
	shadow.Shadow = true
	_, err = service.NewFromRules(service.Rules{Default: service.Limits{spelled, shadow}}, hotlimit.WithBurst(5))
	assert.ErrorContains(t, err, "default[1]: the same limit as default[0]")
	assert.ErrorContains(t, err, "under the service's burst 5")
	assert.ErrorContains(t, err, "give the shadow limit another limit or window", "the shadow copy under the service's burst")
	_, err = service.NewFromRules(service.Rules{Default: service.Limits{spelled, real}}, hotlimit.WithBurst(5))
	assert.ErrorContains(t, err, "under the service's burst 5")
	assert.NotContains(t, err.Error(), "shadow", "neither is in shadow mode")
	// the least burst a service can have says so too
	spelled.Burst = 1
	_, err = service.NewFromRules(service.Rules{Default: service.Limits{spelled, real}}, hotlimit.WithBurst(1))
	assert.ErrorContains(t, err, "under the service's burst 1")
}

func TestLenAndSweepCountTakeWithKeys(t *testing.T) {
	clock, now := frozen(int64(time.Hour))
	s, err := service.New(cfg(hotlimit.FixedWindow, 100), clock)
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	for i := range 10 {
		_, err := s.TakeWith(fmt.Sprint("tenant", i), "a", plan, 1)
		require.NoError(t, err)
	}
	require.True(t, s.Allow("u", "a"))
	assert.Equal(t, 11, s.Len(), "ten keys of the plan's limiter and one of the rule's")
	assert.Zero(t, s.Sweep(), "no key is idle yet")
	now.Add(int64(time.Minute))
	assert.Equal(t, 11, s.Sweep(), "every key is idle")
	assert.Zero(t, s.Len())
}

// TestNearLimitIsAShareOfTheBurst: a rule of 100 per minute with a burst of
// 10 has at most 10 Remaining, so it is near its limit when 2 or fewer are
// left (20% of the burst), not at every request; the same through Allow,
// Take and a rule of several limits.
func TestNearLimitIsAShareOfTheBurst(t *testing.T) {
	bursty := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 10}
	daily := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100000, Window: 24 * time.Hour}
	for _, tc := range []struct {
		name  string
		rules service.Rules
		take  bool
	}{
		{"Allow", service.Rules{Default: service.Limits{bursty}}, false},
		{"Take", service.Rules{Default: service.Limits{bursty}}, true},
		{"several", service.Rules{Default: service.Limits{bursty, daily}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var outcomes []hotlimit.Outcome
			obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { outcomes = append(outcomes, e.Outcome) })
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(tc.rules, clock, hotlimit.WithObserver(obs))
			require.NoError(t, err)
			for range 11 {
				if tc.take {
					s.Take("alice", "GET /", 1)
				} else {
					s.Allow("alice", "GET /")
				}
			}
			want := []hotlimit.Outcome{}
			for range 7 { // Remaining 9 .. 3
				want = append(want, hotlimit.OutcomeAllowed)
			}
			for range 3 { // Remaining 2, 1, 0
				want = append(want, hotlimit.OutcomeNearLimit)
			}
			want = append(want, hotlimit.OutcomeDenied)
			assert.Equal(t, want, outcomes)
		})
	}
}

// Two copies of an invalid limit in one rule (two limits missing the same
// field) are first of all invalid: the error names the first copy's invalid
// field, in Go and in JSON, rather than calling the second a copy.
func TestCopiesOfAnInvalidLimitNameItsField(t *testing.T) {
	real := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}
	noLimit := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Window: time.Second}
	rules := service.Rules{Default: service.Limits{real, noLimit, noLimit}}
	_, err := service.NewFromRules(rules)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.EqualError(t, err, "service: default[1]: hotlimit: Config.Limit 0 must be at least 1: invalid config")
	assert.EqualError(t, rules.Validate(), "service: default[1]: hotlimit: Config.Limit 0 must be at least 1: invalid config")
	_, err = service.LoadRules(strings.NewReader(`{"default":[{"algorithm":"TokenBucket","limit":5,"window":"90000h"},` +
		`{"algorithm":"TokenBucket","limit":5,"window":"90000h","shadow":true}]}`))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "default[0]: hotlimit: Config.Window 90000h0m0s out of range")
}

// TestTakeWithShadowModeKeepsThePlansState: as in a rule, a plan given to
// TakeWith and its copy in shadow mode (or with its burst spelled out) are
// one limit: rolling a plan out in shadow mode and then enforcing it keeps
// what its keys have spent, and a copy under another scope counts under its
// own keys of the same limiter.
func TestTakeWithShadowModeKeepsThePlansState(t *testing.T) {
	obs := newCounting()
	clock, _ := frozen(int64(time.Hour))
	s, err := service.New(cfg(hotlimit.FixedWindow, 100), clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)
	plan := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Minute}
	shadow, spelled, perUser := plan, plan, plan
	shadow.Shadow, spelled.Burst, perUser.Scope = true, 2, hotlimit.PerUser
	take := func(c hotlimit.Config) hotlimit.Decision {
		d, err := s.TakeWith("u", "a", c, 1)
		require.NoError(t, err)
		return d
	}
	for i := range 3 {
		d := take(shadow)
		assert.True(t, d.Allowed, "shadow request %d passes", i+1)
	}
	assert.Equal(t, 1, obs.get(service.OverrideRule+" shadow_denied"), "the third would have been denied")
	assert.False(t, take(plan).Allowed, "enforced: the shadow requests spent the quota")
	assert.False(t, take(spelled).Allowed, "the same plan with its burst spelled out")
	assert.True(t, take(perUser).Allowed, "the user's key is apart")
	assert.Equal(t, 2, s.Len(), "one limiter, the pair's key and the user's")
}

// TestTakeWithFirstUsesShareOneLimiter: goroutines make their first TakeWith
// at once, under a plan and its copies that share its limiter, under a
// frozen clock: however the first uses race, one limiter is kept for all,
// and exactly the plan's limit passes.
func TestTakeWithFirstUsesShareOneLimiter(t *testing.T) {
	const limit, goroutines = 5, 8
	for round := range 20 {
		clock, _ := frozen(int64(time.Hour))
		s, err := service.New(cfg(hotlimit.FixedWindow, 100), clock)
		require.NoError(t, err)
		plan := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: limit, Window: time.Minute}
		spelled := plan
		spelled.Burst = limit
		var passed atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				c := []hotlimit.Config{plan, spelled}[g%2]
				for range 2 * limit {
					if d, err := s.TakeWith("u", "a", c, 1); err == nil && d.Allowed {
						passed.Add(1)
					}
				}
			})
		}
		close(start)
		wg.Wait()
		assert.EqualValues(t, limit, passed.Load(), "round %d", round)
		assert.Equal(t, 1, s.Len(), "round %d: one limiter, one key", round)
	}
}

// TestShadowLimitStaysOutOfReportsAndDenials: in a rule of several limits, a
// limit in shadow mode stays out of the caller's Decision as if it were not
// there, on every path: a report (n = 0) and a denial by a real limit (here
// asking for more than it has left, so that the exhausted shadow limit has
// the least Remaining) decide as the real limits alone do, and the limit
// named is a real one.
func TestShadowLimitStaysOutOfReportsAndDenials(t *testing.T) {
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute, Shadow: true}
	real := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Hour}
	other := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 9, Window: time.Hour, Scope: hotlimit.PerUser}
	for _, tc := range []struct {
		name       string
		with, bare service.Limits
	}{
		{"shadow+real", service.Limits{shadow, real}, service.Limits{real}},
		{"real+shadow", service.Limits{real, shadow}, service.Limits{real}},
		{"real+shadow+other", service.Limits{real, shadow, other}, service.Limits{real, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock, _ := frozen(int64(time.Hour))
			with, err := service.NewFromRules(service.Rules{Default: tc.with}, clock)
			require.NoError(t, err)
			bare, err := service.NewFromRules(service.Rules{Default: tc.bare}, clock)
			require.NoError(t, err)
			for i := range 3 {
				require.Equal(t, bare.Take("u", "a", 1), with.Take("u", "a", 1), "request %d", i+1)
			}
			for _, n := range []int{0, 3, -1} {
				wd, wp := with.TakePolicy("u", "a", n)
				bd, bp := bare.TakePolicy("u", "a", n)
				assert.Equal(t, bd, wd, "n = %d: the shadow limit is not in the Decision", n)
				assert.Equal(t, bp, wp, "n = %d: a real limit is named", n)
			}
		})
	}
}

// TestShadowLimitGivesBackWhatADenialTook: a limit in shadow mode that
// admitted a request a real limit then denied gives it back, as any limit of
// the rule does: it counts exactly the requests that passed. Its state is
// read through a rule of the same limit outside shadow mode, which shares
// its limiter and, under the user's scope, its key.
func TestShadowLimitGivesBackWhatADenialTook(t *testing.T) {
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			x := hotlimit.Config{Algorithm: alg, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser}
			shadowX := x
			shadowX.Shadow = true
			real := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute}
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(service.Rules{
				Default: service.Limits{shadowX, real},
				APIs:    map[string]service.Limits{"peek": {x}},
			}, clock)
			require.NoError(t, err)
			assert.Equal(t, 2, passes(s, "u", "a", 5), "the real limit decides")
			assert.Equal(t, 8, s.Take("u", "peek", 0).Remaining, "the shadow limit counts the 2 that passed, not the 3 denied")
		})
	}
}

// TestSeveralLimitsDecideByTheShareOfTheirCapacity: in a rule of several
// limits, the limit that decides an allowed request (the Event's Source, and
// TakePolicy's) is the one with the least share of its capacity left, the
// burst of a token bucket that has one, and the outcome is near_limit
// exactly when that limit's own Remaining is near its own capacity. Judged
// by Remaining/Limit, a token bucket of 10/s with a burst of 20 holding 16
// of its 20 looked less constrained than a fixed window holding 96 of 100,
// and the merged Remaining 16, measured against the window's 100, made
// every request near the limit.
func TestSeveralLimitsDecideByTheShareOfTheirCapacity(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}
	allShadow := service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute, Shadow: true},
		{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20, Shadow: true},
	}
	var last hotlimit.Event
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last = e })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{window, bucket},
		APIs:    map[string]service.Limits{"shadow": allShadow},
	}, clock, hotlimit.WithObserver(obs))
	require.NoError(t, err)

	for _, api := range []string{"enforced", "shadow"} {
		for step, want := range []struct {
			remaining int // the bucket's, the least share: 4 of 20 is 20%
			outcome   hotlimit.Outcome
		}{
			{16, hotlimit.OutcomeAllowed}, // the window holds 96/100, the bucket 16/20
			{12, hotlimit.OutcomeAllowed},
			{8, hotlimit.OutcomeAllowed},
			{4, hotlimit.OutcomeNearLimit},
			{0, hotlimit.OutcomeNearLimit},
		} {
			d, policy := s.TakePolicy("u", api, 4)
			require.True(t, d.Allowed, "%s step %d", api, step)
			assert.Equal(t, want.remaining, d.Remaining, "%s step %d", api, step)
			assert.Equal(t, want.outcome, last.Outcome, "%s step %d", api, step)
			assert.Equal(t, hotlimit.TokenBucket, policy.Algorithm, "%s step %d: TakePolicy names the bucket", api, step)
			assert.Equal(t, hotlimit.TokenBucket, last.Policy.Algorithm, "%s step %d: the Event names the bucket", api, step)
		}
		// A report (n = 0) names the same limit.
		d, policy := s.TakePolicy("u", api, 0)
		assert.Zero(t, d.Remaining, api)
		assert.Equal(t, hotlimit.TokenBucket, policy.Algorithm, api)
		assert.Equal(t, hotlimit.TokenBucket, last.Policy.Algorithm, api)
	}
}

// TestNearLimitIsAShareOfTheServicesDefaultBurst: a token bucket that sets
// no burst of its own takes the service's (hotlimit.WithBurst), and its
// near-limit share, alone or in a rule of several limits, is of that burst:
// with 10/s and a default burst of 20, Remaining 4 is near the limit.
func TestNearLimitIsAShareOfTheServicesDefaultBurst(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}
	perMinute := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 100}
	var last hotlimit.Event
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last = e })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{bucket},
		APIs:    map[string]service.Limits{"several": {perMinute, bucket}},
	}, clock, hotlimit.WithObserver(obs), hotlimit.WithBurst(20))
	require.NoError(t, err)
	bucket20 := bucket // as the service reports it: with the burst it has
	bucket20.Burst = 20
	for _, api := range []string{"one", "several"} {
		for step, want := range []struct {
			remaining int
			outcome   hotlimit.Outcome
		}{
			{16, hotlimit.OutcomeAllowed},
			{12, hotlimit.OutcomeAllowed},
			{8, hotlimit.OutcomeAllowed},
			{4, hotlimit.OutcomeNearLimit}, // 20% of the burst 20
			{0, hotlimit.OutcomeNearLimit},
		} {
			d, policy := s.TakePolicy("u", api, 4)
			require.True(t, d.Allowed, "%s step %d", api, step)
			assert.Equal(t, want.remaining, d.Remaining, "%s step %d", api, step)
			assert.Equal(t, want.outcome, last.Outcome, "%s step %d", api, step)
			assert.Equal(t, bucket20, policy, "%s step %d: 16/20 left is less than 96/100", api, step)
		}
	}
	// Allow's path without Take.
	for range 3 {
		s.Allow("v", "one")
	}
	ok := s.Allow("v", "one") // Remaining 16: allowed
	require.True(t, ok)
	assert.Equal(t, hotlimit.OutcomeAllowed, last.Outcome)
	for range 12 {
		s.Allow("v", "one")
	}
	s.Allow("v", "one") // Remaining 3
	assert.Equal(t, hotlimit.OutcomeNearLimit, last.Outcome)
}

// TestNilObserverFuncReportsNothing gives the service a nil ObserverFunc,
// an easy value to pass from a variable never set: it reports nothing, as a
// nil Observer does, instead of panicking at every decision.
func TestNilObserverFuncReportsNothing(t *testing.T) {
	var f hotlimit.ObserverFunc
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}, hotlimit.WithObserver(f))
	require.NoError(t, err)
	assert.True(t, s.Allow("alice", "GET /pay"))
	assert.False(t, s.Take("alice", "GET /pay", 1).Allowed)
	d, err := s.TakeWith("alice", "GET /pay", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second}, 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
}

// TestReportedPolicySpellsOutTheServicesBurst: under a service burst
// (hotlimit.WithBurst among the service's options), the limit TakePolicy,
// TakeEach and the observer report carries that burst, so that its Capacity
// bounds the Remaining reported with it, and a caller that advertises the
// policy (as httplimit's q) never advertises less than the client gets.
func TestReportedPolicySpellsOutTheServicesBurst(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second}
	window := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Burst: 100}
	var last hotlimit.Event
	obs := hotlimit.ObserverFunc(func(e hotlimit.Event) { last = e })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{bucket},
		APIs: map[string]service.Limits{"several": {window, bucket},
			"pair": {bucket, {Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}}},
	}, clock, hotlimit.WithObserver(obs), hotlimit.WithBurst(10))
	require.NoError(t, err)
	want := bucket
	want.Burst = 10
	for _, api := range []string{"one", "several"} {
		d, policy := s.TakePolicy("u", api, 1)
		require.True(t, d.Allowed, api)
		assert.Equal(t, 9, d.Remaining, api)
		assert.Equal(t, want, policy, api)
		assert.LessOrEqual(t, d.Remaining+1, policy.Capacity(), api)
		assert.Equal(t, want, last.Policy, api)

		_, each, err := s.TakeEach(context.Background(), "u", api, 1, nil)
		require.NoError(t, err, api)
		require.NotEmpty(t, each, api)
		assert.Equal(t, want, each[0].Config, api)
		for _, ld := range each {
			assert.LessOrEqual(t, ld.Decision.Remaining, ld.Config.Capacity(), "%s %v", api, ld.Config)
		}
	}
	// Every limit TakeEach reports spells it out, not only the one that
	// decides.
	_, each, err := s.TakeEach(context.Background(), "u", "pair", 1, nil)
	require.NoError(t, err)
	require.Len(t, each, 2)
	for _, ld := range each {
		assert.Equal(t, 10, ld.Config.Burst, "%v", ld.Config)
	}
	// The rules read back as given.
	assert.Equal(t, service.Limits{bucket}, s.Rules().Default)
}

// TestServiceBurstLeavesLimitsWithoutBurstAlone: the service's default burst
// (hotlimit.WithBurst among its options) is for the token buckets and GCRA
// limits that set none; a fixed window, sliding counter or sliding log, which
// have no burst, keep their limit instead of failing the whole rule set with
// a burst the rules never gave them.
func TestServiceBurstLeavesLimitsWithoutBurstAlone(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{window},
		APIs: map[string]service.Limits{
			"counter": {{Algorithm: hotlimit.SlidingCounter, Limit: 3, Window: time.Minute}},
			"log":     {{Algorithm: hotlimit.SlidingLog, Limit: 3, Window: time.Minute}},
			"bucket":  {bucket},
			"both":    {bucket, window},
		},
	}, clock, hotlimit.WithBurst(5))
	require.NoError(t, err)
	for api, want := range map[string]int{"/": 3, "counter": 3, "log": 3, "bucket": 5, "both": 3} {
		passed := 0
		for range 10 {
			if s.Allow("u", api) {
				passed++
			}
		}
		assert.Equal(t, want, passed, api)
	}
	d, policy := s.TakePolicy("v", "/", 1)
	assert.Equal(t, window, policy)
	assert.Equal(t, 2, d.Remaining)
	// TakeWith takes the same default.
	d, err = s.TakeWith("v", "/", hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 2, Window: time.Minute}, 1)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 1, d.Remaining)
}

// TestResolvePolicySpellsOutTheServicesBurst: ResolvePolicy names the limit
// that applies as TakePolicy names it, with the service's burst (for a limit
// that sets none), where Resolve gives it as the rules do; it decides
// nothing, and the observer hears nothing.
func TestResolvePolicySpellsOutTheServicesBurst(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second}
	gcra := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Burst: 100}
	window := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second}
	events := 0
	obs := hotlimit.ObserverFunc(func(hotlimit.Event) { events++ })
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{bucket},
		APIs:    map[string]service.Limits{"own": {gcra, bucket}, "window": {window}},
	}, clock, hotlimit.WithObserver(obs), hotlimit.WithBurst(10))
	require.NoError(t, err)
	spelled := bucket
	spelled.Burst = 10
	assert.Equal(t, bucket, s.Resolve("u", "x"), "Resolve: as the rules give it")
	assert.Equal(t, spelled, s.ResolvePolicy("u", "x"), "the service's burst spelled out")
	assert.Equal(t, gcra, s.ResolvePolicy("u", "own"), "a burst of its own stays")
	assert.Equal(t, window, s.ResolvePolicy("u", "window"), "a fixed window has no burst")
	assert.Zero(t, events, "nothing decided, nothing observed")
	_, policy := s.TakePolicy("u", "x", 1)
	assert.Equal(t, policy, s.ResolvePolicy("u", "x"), "the policy TakePolicy names")
}

// TestResolvePoliciesOfShadowLimitsSpellOutTheServicesBurst: a rule whose
// every limit is in shadow mode lists them all, each with the service's
// burst spelled out, as it lists the limits that enforce.
func TestResolvePoliciesOfShadowLimitsSpellOutTheServicesBurst(t *testing.T) {
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Second, Shadow: true}
	gcra := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 100, Window: time.Minute, Shadow: true}
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{bucket, gcra}}, hotlimit.WithBurst(10))
	require.NoError(t, err)
	got := s.ResolvePolicies("u", "x")
	require.Len(t, got, 2)
	for _, c := range got {
		assert.Equal(t, 10, c.Burst, "%v", c)
	}
}

// checkFails is an observer that says it cannot report.
type checkFails struct{ hotlimit.ObserverFunc }

func (checkFails) CheckObserver() error { return errors.New("cannot report") }

// TestNewFromRulesRefusesAnObserverThatCannotReport: an observer whose
// CheckObserver fails, given alone or among others, is NewFromRules's
// error, rather than a service that reports nothing.
func TestNewFromRulesRefusesAnObserverThatCannotReport(t *testing.T) {
	rules := service.Rules{Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}}}
	bad := checkFails{func(hotlimit.Event) {}}
	for _, obs := range []hotlimit.Observer{bad, hotlimit.Observers(hotlimit.ObserverFunc(func(hotlimit.Event) {}), bad)} {
		_, err := service.NewFromRules(rules, hotlimit.WithObserver(obs))
		assert.ErrorContains(t, err, "service: WithObserver: cannot report")
	}
}

// TestResolvePolicySkipsShadowLimits: a rule whose first limit is in shadow
// mode never names it for a decided request (TakePolicy leaves shadow
// limits out unless every limit is in shadow mode), so ResolvePolicy names
// the first limit enforced; a rule of shadow limits only names its first.
func TestResolvePolicySkipsShadowLimits(t *testing.T) {
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Shadow: true}
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{shadow, bucket},
		APIs:    map[string]service.Limits{"shadow": {shadow}},
	}, clock, hotlimit.WithBurst(4))
	require.NoError(t, err)
	spelled := bucket
	spelled.Burst = 4
	assert.Equal(t, spelled, s.ResolvePolicy("u", "x"), "the first limit enforced, its burst spelled out")
	for range 3 { // the shadow limit would have denied the third
		_, policy := s.TakePolicy("u", "x", 1)
		assert.Equal(t, policy, s.ResolvePolicy("u", "x"), "the policy TakePolicy names")
	}
	assert.Equal(t, shadow, s.ResolvePolicy("u", "shadow"), "every limit in shadow mode: the first")
	_, policy := s.TakePolicy("u", "shadow", 1)
	assert.Equal(t, policy, s.ResolvePolicy("u", "shadow"))
}

// TestResolvePoliciesListsWhatTakeEachLists: ResolvePolicies lists the
// limits TakeEach lists for the same rule, the service's burst spelled
// out and shadow limits left out beside others, ResolvePolicy's first.
func TestResolvePoliciesListsWhatTakeEachLists(t *testing.T) {
	shadow := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Shadow: true}
	bucket := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	user := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser}
	log := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 5, Window: time.Minute}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{shadow, log, bucket, user},
		APIs:    map[string]service.Limits{"shadow": {shadow}, "one": {bucket}},
	}, clock, hotlimit.WithBurst(4))
	require.NoError(t, err)
	for _, api := range []string{"x", "shadow", "one"} {
		listed := s.ResolvePolicies("u", api)
		require.NotEmpty(t, listed, api)
		assert.Equal(t, s.ResolvePolicy("u", api), listed[0], api)
		_, each, err := s.TakeEach(context.Background(), "u", api, 1, nil)
		require.NoError(t, err)
		var taken service.Limits
		for _, ld := range each {
			taken = append(taken, ld.Config)
		}
		assert.ElementsMatch(t, taken, listed, api)
	}
}
