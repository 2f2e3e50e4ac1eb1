package service_test

import (
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

// one is a rule of the single limit c.
func one(c hotlimit.Config) service.Limits { return service.Limits{c} }

func TestReplaceKeepsStateOfUnchangedPairs(t *testing.T) {
	def, fw5, tb3 := cfg(hotlimit.FixedWindow, 10), cfg(hotlimit.FixedWindow, 5), cfg(hotlimit.TokenBucket, 3)
	s, _ := newService(t, def)
	require.NoError(t, s.ConfigureUser("u", fw5))
	require.NoError(t, s.ConfigureAPI("tb", tb3))
	require.Equal(t, 4, passes(s, "u", "a", 4))     // fw5: 1 left
	require.Equal(t, 2, passes(s, "x", "tb", 2))    // tb3: 1 left
	require.Equal(t, 3, passes(s, "x", "a", 3))     // def: 7 left
	require.Equal(t, 1, passes(s, "moved", "a", 1)) // def: 9 left

	require.NoError(t, s.Replace(service.Rules{
		Default: one(def),
		Users:   map[string]service.Limits{"u": one(fw5), "moved": one(tb3)},
		APIs:    map[string]service.Limits{"other": one(tb3)},
	}))
	assert.Equal(t, 1, passes(s, "u", "a", 5), "same rule, same state")
	assert.Equal(t, 7, passes(s, "x", "a", 10), "default unchanged")
	assert.Equal(t, 3, passes(s, "moved", "a", 5), "moved to tb3: its own fresh state there")
	// x@tb lost its API rule and falls back to the default.
	assert.Equal(t, 10, passes(s, "x", "tb", 20))
	// The pair's state under tb3 survived, since another rule still uses tb3.
	require.NoError(t, s.ConfigureAPI("tb", tb3))
	assert.Equal(t, 1, passes(s, "x", "tb", 5))
}

func TestReplaceDropsUnusedLimitersWithTheirState(t *testing.T) {
	def, tb3 := cfg(hotlimit.FixedWindow, 10), cfg(hotlimit.TokenBucket, 3)
	s, _ := newService(t, def)
	require.NoError(t, s.ConfigureUser("u", tb3))
	require.Equal(t, 3, passes(s, "u", "a", 5))
	require.Equal(t, 1, s.Len(), "one pair state, in tb3")
	require.NoError(t, s.Replace(service.Rules{Default: one(def)}))
	assert.Equal(t, 0, s.Len(), "tb3's limiter is gone")
	require.NoError(t, s.Replace(service.Rules{Default: one(def), Users: map[string]service.Limits{"u": one(tb3)}}))
	assert.Equal(t, 3, passes(s, "u", "a", 5), "a new limiter, fresh state")
}

// TestReplaceLoweringALimitStartsItAfresh pins what an operator lowering a
// limit under abuse gets, as Replace and the README say: a limit changed in
// its limit (or algorithm, window or burst) is another limit, which every
// key starts afresh, however much it spent under the old one; kept beside
// the new limit until its window ends, the old limit carries the count.
func TestReplaceLoweringALimitStartsItAfresh(t *testing.T) {
	fw10, fw5 := cfg(hotlimit.FixedWindow, 10), cfg(hotlimit.FixedWindow, 5)
	s, _ := newService(t, fw10)
	require.Equal(t, 8, passes(s, "u", "a", 8))
	require.NoError(t, s.Replace(service.Rules{Default: one(fw5)}))
	assert.Equal(t, 5, passes(s, "u", "a", 10), "the lowered limit, afresh: more than the 2 the old one had left")

	s, _ = newService(t, fw10)
	require.Equal(t, 8, passes(s, "u", "a", 8))
	require.NoError(t, s.Replace(service.Rules{Default: service.Limits{fw10, fw5}}))
	assert.Equal(t, 2, passes(s, "u", "a", 10), "the old limit, kept beside, carries its count")
	require.NoError(t, s.Replace(service.Rules{Default: one(fw5)}))
	assert.Equal(t, 3, passes(s, "u", "a", 10), "the new limit keeps the 2 it counted beside the old")
}

func TestRejectedReplaceChangesNothing(t *testing.T) {
	def := cfg(hotlimit.FixedWindow, 3)
	s, _ := newService(t, def)
	require.NoError(t, s.ConfigureUser("u", cfg(hotlimit.TokenBucket, 5)))
	require.Equal(t, 2, passes(s, "u", "a", 2))
	before := s.Rules()
	for i, bad := range []service.Rules{
		{},
		{Default: service.Limits{}},
		{Default: one(def), Users: map[string]service.Limits{"u": one(cfg(hotlimit.TokenBucket, 1<<30))}},
		{Default: one(def), APIs: map[string]service.Limits{"a": {def, def}}},
		{Default: one(def), Pairs: map[service.Pair]service.Limits{{User: "u", API: "a"}: {{Algorithm: 42, Limit: 1, Window: time.Second}}}},
		{Default: one(def), Pairs: map[service.Pair]service.Limits{{User: "u", API: "a"}: nil}},
	} {
		err := s.Replace(bad)
		require.Error(t, err, "case %d", i)
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "case %d", i)
	}
	assert.Equal(t, before, s.Rules())
	assert.Equal(t, 3, passes(s, "u", "a", 5), "state kept")
}

func TestRulesReturnsWhatReplaceInstalled(t *testing.T) {
	r := sampleRules()
	for k, ls := range r.Pairs {
		if len(ls) > 1 {
			delete(r.Pairs, k) // several limits are covered by their own tests
		}
	}
	s, err := service.NewFromRules(r)
	require.NoError(t, err)
	assert.Equal(t, r, s.Rules())

	got := s.Rules()
	got.Users["alice"][0].Limit = 99
	got.Default[0].Limit = 99
	assert.Equal(t, r, s.Rules(), "Rules returns a copy")

	in := r.Clone()
	require.NoError(t, s.Replace(in))
	in.APIs["GET /search"][0].Limit = 1
	assert.Equal(t, r, s.Rules(), "Replace copies its argument")

	// Configure* is a one-limit shortcut over the same rules.
	s2, err := service.New(r.Default[0])
	require.NoError(t, err)
	require.NoError(t, s2.ConfigureUser("u", cfg(hotlimit.GCRA, 2)))
	require.NoError(t, s2.ConfigureAPI("a", cfg(hotlimit.GCRA, 3)))
	require.NoError(t, s2.ConfigureUserAPI("u", "a", cfg(hotlimit.GCRA, 4)))
	assert.Equal(t, service.Rules{
		Default: r.Default,
		Users:   map[string]service.Limits{"u": one(cfg(hotlimit.GCRA, 2))},
		APIs:    map[string]service.Limits{"a": one(cfg(hotlimit.GCRA, 3))},
		Pairs:   map[service.Pair]service.Limits{{User: "u", API: "a"}: one(cfg(hotlimit.GCRA, 4))},
	}, s2.Rules())
	assert.Equal(t, service.Limits{cfg(hotlimit.GCRA, 4)}, s2.ResolveLimits("u", "a"))
}

func TestNewFromRulesRejectsBadRules(t *testing.T) {
	s, err := service.NewFromRules(service.Rules{})
	assert.Nil(t, s)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, "default")

	_, err = service.NewFromRules(service.Rules{
		Default: one(cfg(hotlimit.GCRA, 1)),
		APIs:    map[string]service.Limits{"GET /x": one(cfg(hotlimit.SlidingLog, 1<<20))},
	})
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, `apis["GET /x"][0]: hotlimit: Config.Limit 1048576 out of range [1, 65536] for SlidingLog`)
}

// TestReplaceHammer swaps two rule sets in a loop while goroutines call Allow
// on pairs whose rule is the same in both (and on pairs whose rule changes),
// under a frozen clock. The unchanged pairs must pass exactly their limit in
// total: no state is lost across a Replace.
func TestReplaceHammer(t *testing.T) {
	goroutines, calls, swaps := 8, 400, 300
	if testing.Short() {
		calls, swaps = 100, 50
	}
	fw7, tb5, sl3 := cfg(hotlimit.FixedWindow, 7), cfg(hotlimit.TokenBucket, 5), cfg(hotlimit.SlidingLog, 3)
	gc4, sc6 := cfg(hotlimit.GCRA, 4), cfg(hotlimit.SlidingCounter, 6)
	big := cfg(hotlimit.FixedWindow, 1<<20)
	both1 := service.Limits{cfg(hotlimit.FixedWindow, 9), gc4}                         // 4 pass
	both2 := service.Limits{cfg(hotlimit.SlidingLog, 6), cfg(hotlimit.TokenBucket, 8)} // 6 pass
	// Unchanged between a and b: the default (fw7), user "u" (tb5), API "s"
	// (sl3), pair (p, q) (gc4), and the pairs (m, n) and (m, o) of two limits
	// each. Changing: user "c" and API "x", whose rules
	// alternate, and a pair that exists only in a.
	a := service.Rules{
		Default: one(fw7),
		Users:   map[string]service.Limits{"u": one(tb5), "c": one(sc6)},
		APIs:    map[string]service.Limits{"s": one(sl3), "x": one(big)},
		Pairs: map[service.Pair]service.Limits{
			{User: "p", API: "q"}: one(gc4), {User: "only", API: "a"}: one(sc6),
			{User: "m", API: "n"}: both1, {User: "m", API: "o"}: both2,
		},
	}
	b := service.Rules{
		Default: one(fw7),
		Users:   map[string]service.Limits{"u": one(tb5), "c": {big, sc6}},
		APIs:    map[string]service.Limits{"s": one(sl3), "x": one(sc6)},
		Pairs: map[service.Pair]service.Limits{
			{User: "p", API: "q"}: one(gc4),
			{User: "m", API: "n"}: both1, {User: "m", API: "o"}: both2,
		},
	}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(a, clock)
	require.NoError(t, err)

	steady := []struct {
		user, api string
		want      int
	}{
		{"d", "e", 7},  // default
		{"u", "e", 5},  // user u
		{"d", "s", 3},  // API s
		{"p", "q", 4},  // pair
		{"u2", "e", 7}, // default, another pair
		{"m", "n", 4},  // two limits, the second binds
		{"m", "o", 6},  // two limits, the first binds
	}
	churn := [][2]string{{"c", "e"}, {"d", "x"}, {"only", "a"}, {"c", "x"}}
	passed := make([]atomic.Int64, len(steady))
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop.Store(true)
		for i := range swaps {
			if i%2 == 0 {
				assert.NoError(t, s.Replace(b))
			} else {
				assert.NoError(t, s.Replace(a))
			}
			if i%16 == 0 {
				s.Sweep()
			}
		}
	})
	for g := range goroutines {
		wg.Go(func() {
			for i := 0; i < calls || !stop.Load(); i++ {
				k := (g + i) % len(steady)
				if s.Allow(steady[k].user, steady[k].api) {
					passed[k].Add(1)
				}
				p := churn[(g+i)%len(churn)]
				s.Allow(p[0], p[1])
			}
		})
	}
	wg.Wait()
	for k, p := range steady {
		assert.EqualValues(t, p.want, passed[k].Load(), "%s@%s", p.user, p.api)
		assert.Equal(t, 0, passes(s, p.user, p.api, 3), "%s@%s afterwards", p.user, p.api)
	}
}

func TestReplaceWhileAllowingDoesNotAllocateOnAHotPair(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 1<<20))
	require.NoError(t, s.Replace(service.Rules{Default: one(cfg(hotlimit.FixedWindow, 1<<20)), Users: map[string]service.Limits{"v": one(cfg(hotlimit.GCRA, 9))}}))
	require.True(t, s.Allow("user", "api"))
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("user", "api") }))
}

func TestLoadRulesThenReplace(t *testing.T) {
	s, _ := newService(t, cfg(hotlimit.FixedWindow, 2))
	r, err := service.LoadRules(strings.NewReader(`{"default":[{"algorithm":"FixedWindow","limit":2,"window":"1s"}],"apis":{"x":[{"algorithm":"gcra","limit":4,"window":"1s"}]}}`))
	require.NoError(t, err)
	require.NoError(t, s.Replace(r))
	assert.Equal(t, 4, passes(s, "u", "x", 10))
	assert.Equal(t, 2, passes(s, "u", "y", 10))
}

// TestReplaceSpellingTheSameBurstKeepsState: a burst of 0 means the limit, so
// a Replace that spells the burst out (or drops it) changes no limit, and a
// key at its limit must stay there, under the limiter it had.
func TestReplaceSpellingTheSameBurstKeepsState(t *testing.T) {
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			implicit := hotlimit.Config{Algorithm: alg, Limit: 3, Window: time.Minute}
			explicit := implicit
			explicit.Burst = 3
			s, _ := newService(t, implicit)
			require.Equal(t, 3, passes(s, "u", "e", 5))
			require.NoError(t, s.Replace(service.Rules{Default: one(explicit)}))
			assert.Equal(t, 0, passes(s, "u", "e", 5), "burst 3 spelled out: still at the limit")
			assert.Equal(t, explicit, s.Resolve("u", "e"), "the rules say what was given")
			require.NoError(t, s.Replace(service.Rules{Default: one(implicit)}))
			assert.Equal(t, 0, passes(s, "u", "e", 5), "and back")
		})
	}
}

// TestSpelledOutBurstIsTheSameLimitInARule: a limit and its copy with the
// burst spelled out share one limiter and, under one scope, one key: a rule
// holding both would take every request twice, so it is rejected.
func TestSpelledOutBurstIsTheSameLimitInARule(t *testing.T) {
	implicit := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 2, Window: time.Second}
	explicit := implicit
	explicit.Burst = 2
	for _, ls := range []service.Limits{{implicit, explicit}, {explicit, implicit}} {
		_, err := service.NewFromRules(service.Rules{Default: ls})
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", ls)
		assert.ErrorContains(t, err, "default[1]: the same limit as default[0]", "%v", ls)
	}
}

// TestReplaceSpellingTheServicesBurstKeepsState: under a service burst
// (WithBurst among its options), a token bucket or GCRA limit that sets no
// burst of its own takes the service's, and TakePolicy reports it spelled
// out. Rules that spell it out, as an operator copying the reported policy
// would write them, are the same limit: a Replace between the two keeps
// every key's state.
func TestReplaceSpellingTheServicesBurstKeepsState(t *testing.T) {
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			implicit := hotlimit.Config{Algorithm: alg, Limit: 10, Window: time.Minute}
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(service.Rules{Default: one(implicit)}, clock, hotlimit.WithBurst(4))
			require.NoError(t, err)
			_, policy := s.TakePolicy("u", "e", 0)
			require.Equal(t, 4, policy.Burst, "reported spelled out")
			require.Equal(t, 4, passes(s, "u", "e", 10))
			require.NoError(t, s.Replace(service.Rules{Default: one(policy)}))
			assert.Zero(t, passes(s, "u", "e", 5), "burst 4 spelled out: still at the limit")
			assert.Equal(t, policy, s.Resolve("u", "e"), "the rules say what was given")
			require.NoError(t, s.Replace(service.Rules{Default: one(implicit)}))
			assert.Zero(t, passes(s, "u", "e", 5), "and back")
		})
	}
}

// TestSpelledOutServicesBurstIsTheSameLimitInARule: under a service burst,
// a limit and its copy with that burst spelled out share one limiter and,
// under one scope, one key: a rule holding both would take every request
// twice, so it is rejected. Without the service's burst they are two
// limits.
func TestSpelledOutServicesBurstIsTheSameLimitInARule(t *testing.T) {
	implicit := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Minute}
	explicit := implicit
	explicit.Burst = 4
	explicit.Shadow = true
	for _, ls := range []service.Limits{{implicit, explicit}, {explicit, implicit}} {
		_, err := service.NewFromRules(service.Rules{Default: ls}, hotlimit.WithBurst(4))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", ls)
		assert.ErrorContains(t, err, "default[1]: the same limit as default[0]", "%v", ls)
		_, err = service.NewFromRules(service.Rules{Default: ls})
		assert.NoError(t, err, "%v", ls)
	}
	perUser := explicit
	perUser.Scope = hotlimit.PerUser
	_, err := service.NewFromRules(service.Rules{Default: service.Limits{implicit, perUser}}, hotlimit.WithBurst(4))
	assert.NoError(t, err, "another scope: another key")
}

// TestLimitAtItsLimitsBurstIsAnotherLimitUnderTheServicesBurst: a burst
// equal to the limit is what a limit of no burst takes only when the
// service sets no burst of its own. Under WithBurst(2), TokenBucket 3 per
// minute with burst 3 and the same limit with no burst (so burst 2) are
// two buckets: the rule holding both is taken, in Go and from JSON, and
// passes what the smaller burst passes. Without the service's burst the
// two are one limit, and the service rejects the rule.
func TestLimitAtItsLimitsBurstIsAnotherLimitUnderTheServicesBurst(t *testing.T) {
	implicit := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute}
	atLimit := implicit
	atLimit.Burst = 3
	for _, ls := range []service.Limits{{atLimit, implicit}, {implicit, atLimit}} {
		clock, _ := frozen(int64(time.Hour))
		s, err := service.NewFromRules(service.Rules{Default: ls}, clock, hotlimit.WithBurst(2))
		require.NoError(t, err, "%v", ls)
		assert.Equal(t, 2, passes(s, "u", "e", 5), "%v: the service's burst of 2 decides", ls)

		_, err = service.NewFromRules(service.Rules{Default: ls})
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", ls)
		assert.ErrorContains(t, err, "default[1]: the same limit as default[0]", "%v", ls)
	}
	text := `{"default":[{"algorithm":"TokenBucket","limit":3,"window":"1m","burst":3},{"algorithm":"TokenBucket","limit":3,"window":"1m"}]}`
	rules, err := service.LoadRules(strings.NewReader(text))
	require.NoError(t, err, "whether the two are one limit is the service's burst's to say")
	_, err = service.NewFromRules(rules, hotlimit.WithBurst(2))
	assert.NoError(t, err)
}
