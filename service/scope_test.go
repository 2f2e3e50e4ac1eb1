package service_test

import (
	"fmt"
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

// scoped returns c with scope s.
func scoped(c hotlimit.Config, s hotlimit.Scope) hotlimit.Config {
	c.Scope = s
	return c
}

func perMinute(limit int, s hotlimit.Scope) hotlimit.Config {
	return hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: limit, Window: time.Minute, Scope: s}
}

// TestPerUserLimitIsATotalAcrossAPIs: with a default of 10/s per pair, a user
// rule of 10/s per user gives carol ten requests in all, whichever APIs they
// go to, while other users keep ten per pair.
func TestPerUserLimitIsATotalAcrossAPIs(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	tenPerSecond := cfg(hotlimit.TokenBucket, 10)
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{tenPerSecond},
		Users:   map[string]service.Limits{"carol": {scoped(tenPerSecond, hotlimit.PerUser)}},
	}, clock)
	require.NoError(t, err)
	assert.Equal(t, 10, passes(s, "carol", "GET /pay", 10))
	assert.Zero(t, passes(s, "carol", "GET /", 10), "carol's total is spent")
	d := s.Take("carol", "GET /", 0)
	assert.Zero(t, d.Remaining)
	assert.Equal(t, 10, passes(s, "dave", "GET /pay", 20), "the default stays per pair")
	assert.Equal(t, 10, passes(s, "dave", "GET /", 20))
}

// TestDenialBySomeScopeSpendsNoOtherQuota is "10/min per user AND 3/min per
// pair" in one rule: three requests to /a pass, the next ones to /a are denied
// by the pair limit and do not spend the user's quota, so /b, /c and /d then
// get their passes until the user's total of 10.
func TestDenialBySomeScopeSpendsNoOtherQuota(t *testing.T) {
	for _, order := range []string{"userFirst", "pairFirst"} {
		t.Run(order, func(t *testing.T) {
			ls := service.Limits{perMinute(10, hotlimit.PerUser), perMinute(3, hotlimit.PerPair)}
			if order == "pairFirst" {
				ls[0], ls[1] = ls[1], ls[0]
			}
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(service.Rules{Default: ls}, clock)
			require.NoError(t, err)
			var got []string
			for range 3 + 9 {
				got = append(got, status(s.Allow("carol", "/a")))
			}
			assert.Equal(t, "200 200 200 429 429 429 429 429 429 429 429 429", strings.Join(got, " "))
			d := s.Take("carol", "/b", 0)
			assert.True(t, d.Allowed)
			assert.Equal(t, 3, d.Remaining, "/b's pair quota, the least")
			d, policy := s.TakePolicy("carol", "/b", 0)
			assert.True(t, d.Allowed)
			assert.Equal(t, perMinute(10, hotlimit.PerUser), policy, "7/10 left of the user's quota, 3/3 of the pair's")
			assert.Equal(t, 7, d.Remaining, "the user's quota, the policy returned with it")
			assert.Equal(t, 3, passes(s, "carol", "/b", 5))
			assert.Equal(t, 3, passes(s, "carol", "/c", 5))
			assert.Equal(t, 1, passes(s, "carol", "/d", 5), "the user's tenth")
			assert.Zero(t, passes(s, "carol", "/e", 5), "the user's total is spent")
			assert.Equal(t, 3, passes(s, "dave", "/a", 5), "another user has their own quotas")
		})
	}
}

func status(allowed bool) string {
	if allowed {
		return "200"
	}
	return "429"
}

// TestScopesShareQuotasAsNamed: a per-api limit is shared by the users of an
// api, a global one by everyone, and a per-user one by a user's apis.
func TestScopesShareQuotasAsNamed(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{perMinute(100, hotlimit.PerPair)},
		APIs: map[string]service.Limits{
			"search": {perMinute(4, hotlimit.PerAPI)},
			"login":  {perMinute(5, hotlimit.Global)},
			"export": {perMinute(5, hotlimit.Global)},
		},
	}, clock)
	require.NoError(t, err)
	assert.Equal(t, 2, passes(s, "ann", "search", 2))
	assert.Equal(t, 2, passes(s, "bob", "search", 5), "ann and bob share search's 4")
	assert.Equal(t, 3, passes(s, "ann", "login", 3))
	assert.Equal(t, 2, passes(s, "bob", "export", 5), "login and export share one global quota of the same limit")
	assert.Zero(t, passes(s, "cat", "login", 1))
	assert.Equal(t, 100, passes(s, "ann", "other", 200), "the default is per pair")
}

// TestScopesNeverCollide: limits that differ only in scope share one limiter,
// under keys that never collide: with "2/min per pair and 2/min per user" a
// pair passes 2 (had the keys collided, each request would count twice and
// only 1 would pass), and names that look like another scope's key stay
// apart.
func TestScopesNeverCollide(t *testing.T) {
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{perMinute(2, hotlimit.PerPair), perMinute(2, hotlimit.PerUser)},
		APIs:    map[string]service.Limits{"x": {perMinute(2, hotlimit.PerAPI)}, "global": {perMinute(2, hotlimit.PerAPI)}},
		Users:   map[string]service.Limits{"x": {perMinute(2, hotlimit.PerUser)}, "api|x": {perMinute(2, hotlimit.PerUser)}},
	}, clock)
	require.NoError(t, err)
	assert.Equal(t, 2, passes(s, "u", "a", 5))
	assert.Zero(t, passes(s, "u", "b", 1), "u's total is spent")
	assert.Equal(t, 2, passes(s, "v", "x", 5), "api x's quota")
	assert.Equal(t, 2, passes(s, "x", "y", 5), "user x's quota is not api x's")
	assert.Equal(t, 2, passes(s, "api|x", "y", 5), `user "api|x" is not api x`)
	assert.Equal(t, 2, passes(s, "w", "global", 5), `api "global" is not the global key`)
	assert.Equal(t, 2, passes(s, "1:u", "b", 5), "a user named like a pair key")
}

func TestNewLimiterRejectsScopes(t *testing.T) {
	for _, sc := range []hotlimit.Scope{hotlimit.PerUser, hotlimit.PerAPI, hotlimit.Global} {
		_, err := service.NewLimiter(scoped(cfg(hotlimit.GCRA, 5), sc))
		assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "%v", sc)
		assert.ErrorContains(t, err, "Config.Scope "+sc.String())
	}
	_, err := service.NewLimiter(cfg(hotlimit.GCRA, 5))
	assert.NoError(t, err, "PerPair is the zero value")
	_, err = service.New(scoped(cfg(hotlimit.GCRA, 5), 7))
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig, "a scope that names none")
	assert.ErrorContains(t, err, "default[0]")
}

func TestRulesJSONScopes(t *testing.T) {
	src := `{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}],` +
		`"users":{"carol":[{"algorithm":"FixedWindow","limit":10,"window":"1m0s","scope":"user"},{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}]},` +
		`"apis":{"GET /pay":[{"algorithm":"GCRA","limit":5,"window":"1s","scope":"global"}],"GET /search":[{"algorithm":"GCRA","limit":5,"window":"1s","scope":"api"}]}}`
	r, err := service.LoadRules(strings.NewReader(src))
	require.NoError(t, err)
	assert.Equal(t, hotlimit.PerUser, r.Users["carol"][0].Scope)
	assert.Equal(t, hotlimit.PerPair, r.Users["carol"][1].Scope)
	assert.Equal(t, hotlimit.Global, r.APIs["GET /pay"][0].Scope)
	assert.Equal(t, hotlimit.PerAPI, r.APIs["GET /search"][0].Scope)
	out, err := r.MarshalJSON()
	require.NoError(t, err)
	assert.JSONEq(t, src, string(out))
	assert.Equal(t, 1, strings.Count(string(out), `"scope":"user"`))
	assert.NotContains(t, string(out), `"pair"`, "PerPair is omitted, so files without scopes round-trip unchanged")

	_, err = service.LoadRules(strings.NewReader(`{"default":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"}],` +
		`"users":{"carol":[{"algorithm":"FixedWindow","limit":3,"window":"1m0s"},{"algorithm":"FixedWindow","limit":10,"window":"1m0s","scope":"per-user"}]}}`))
	require.Error(t, err)
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	assert.ErrorContains(t, err, `users["carol"][1].scope: `)
	assert.ErrorContains(t, err, `unknown scope "per-user"`)
}

// TestFactoryLimitersSeeNoScope: a factory (redislimit.Factory, say) builds
// limiters from Configs without a scope, and is asked under keys that say
// whose quota they count, readable and distinct per scope.
func TestFactoryLimitersSeeNoScope(t *testing.T) {
	var mu sync.Mutex
	var built []hotlimit.Config
	var lims []*countingLimiter
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		mu.Lock()
		defer mu.Unlock()
		built = append(built, c)
		l := &countingLimiter{c: c, seen: map[string]int{}}
		lims = append(lims, l)
		return l, nil
	}
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{cfg(hotlimit.TokenBucket, 2)},
		Users:   map[string]service.Limits{"carol": {scoped(cfg(hotlimit.TokenBucket, 2), hotlimit.PerUser)}},
		APIs:    map[string]service.Limits{"GET /pay": {scoped(cfg(hotlimit.FixedWindow, 3), hotlimit.Global)}, "GET /s": {scoped(cfg(hotlimit.FixedWindow, 3), hotlimit.PerAPI)}},
	}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	assert.ElementsMatch(t, []hotlimit.Config{cfg(hotlimit.TokenBucket, 2), cfg(hotlimit.FixedWindow, 3)}, built,
		"one limiter per Config without its scope")
	s.Allow("zed", "GET /")
	s.Allow("carol", "GET /")
	s.Allow("zed", "GET /pay")
	s.Allow("zed", "GET /s")
	var keys []string
	for _, l := range lims {
		for k := range l.seen {
			keys = append(keys, k)
		}
	}
	assert.ElementsMatch(t, []string{"3:zed|GET /", "user|carol", "global", "api|GET /s"}, keys)
}

// TestFactoryKeysOfScopesNeverCollide: a factory's limiters get their keys
// from the service's cache of keys, which must tell the scopes apart where
// the names alone do not: the user "alice" (PerUser) from the pair
// ("alice", ""), and the api "x" (PerAPI) from the pair ("", "x"). One
// limiter counts all four (one Config), so a key shared would be a quota
// shared.
func TestFactoryKeysOfScopesNeverCollide(t *testing.T) {
	var mu sync.Mutex
	var lims []*countingLimiter
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		mu.Lock()
		defer mu.Unlock()
		l := &countingLimiter{c: c, seen: map[string]int{}}
		lims = append(lims, l)
		return l, nil
	}
	limit := cfg(hotlimit.FixedWindow, 3)
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{limit},
		Users:   map[string]service.Limits{"alice": {scoped(limit, hotlimit.PerUser)}},
		APIs:    map[string]service.Limits{"x": {scoped(limit, hotlimit.PerAPI)}, "": {limit}},
		Pairs:   map[service.Pair]service.Limits{{User: "", API: "x"}: {limit}},
	}, hotlimit.WithFactory(factory))
	require.NoError(t, err)
	require.Len(t, lims, 1, "one limiter for every scope of the Config")
	for _, r := range [][2]string{{"alice", "y"}, {"alice", ""}, {"bob", "x"}, {"", "x"}} {
		assert.True(t, s.Allow(r[0], r[1]), "Allow %q", r)
		assert.True(t, s.Take(r[0], r[1], 1).Allowed, "Take %q", r)
	}
	lims[0].mu.Lock()
	defer lims[0].mu.Unlock()
	assert.Equal(t, map[string]int{"user|alice": 2, "5:alice|": 2, "api|x": 2, "0:|x": 2}, lims[0].seen,
		"Allow and Take count each request under its scope's key")
}

// TestMixedScopesFrozenHammer: "20/min for everyone, 5/min per user, 2/min
// per pair" hammered by many goroutines under a frozen clock never admits
// more than a quota, and a denial by one scope spends no other's: once the
// dust settles, asking every pair again brings the total to exactly 20, with
// no user above 5 and no pair above 2. Single-scope rules pass exactly their
// limit per quota.
func TestMixedScopesFrozenHammer(t *testing.T) {
	const users, apis, goroutines = 6, 4, 8
	calls := 400
	if testing.Short() {
		calls = 100
	}
	for _, alg := range []hotlimit.Algorithm{hotlimit.FixedWindow, hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.SlidingLog, hotlimit.SlidingCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			lim := func(n int, sc hotlimit.Scope) hotlimit.Config {
				return hotlimit.Config{Algorithm: alg, Limit: n, Window: time.Minute, Scope: sc}
			}
			clock, _ := frozen(int64(time.Hour))
			s, err := service.NewFromRules(service.Rules{
				Default: service.Limits{lim(20, hotlimit.Global), lim(5, hotlimit.PerUser), lim(2, hotlimit.PerPair)},
				APIs:    map[string]service.Limits{"solo": {lim(7, hotlimit.PerUser)}},
			}, clock)
			require.NoError(t, err)
			var passed [users][apis + 1]atomic.Int64
			name := func(u, a int) (string, string) {
				if a == apis {
					return fmt.Sprint("u", u), "solo"
				}
				return fmt.Sprint("u", u), fmt.Sprint("a", a)
			}
			var start, wg sync.WaitGroup
			start.Add(1)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					start.Wait()
					for i := range calls {
						u, a := (g+i)%users, (g*7+i)%(apis+1)
						if s.Allow(name(u, a)) {
							passed[u][a].Add(1)
						}
					}
				}()
			}
			start.Done()
			wg.Wait()
			check := func(phase string) (total int64) {
				for u := range users {
					var user int64
					for a := range apis {
						n := passed[u][a].Load()
						assert.LessOrEqual(t, n, int64(2), "%s: pair (%d, %d)", phase, u, a)
						user += n
					}
					assert.LessOrEqual(t, user, int64(5), "%s: user %d", phase, u)
					assert.Equal(t, int64(7), passed[u][apis].Load(), "%s: user %d on solo: exactly the per-user limit", phase, u)
					total += user
				}
				assert.LessOrEqual(t, total, int64(20), phase)
				return total
			}
			check("hammer")
			for u := range users {
				for a := range apis {
					for range 3 {
						if s.Allow(name(u, a)) {
							passed[u][a].Add(1)
						}
					}
				}
			}
			assert.Equal(t, int64(20), check("after"), "no quota was spent by a denial")
		})
	}
}

// TestTakePolicyNamesTheLimitThatDecided: under "100/s token bucket and 3/min
// fixed window", the first three requests are decided by the 3/min limit (the
// least share left), and so is the fourth, which it denies; with the per-second
// limit nearly spent instead, it is the one named.
func TestTakePolicyNamesTheLimitThatDecided(t *testing.T) {
	perSecond := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Second}
	perMin := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}
	clock, _ := frozen(int64(time.Hour))
	s, err := service.NewFromRules(service.Rules{
		Default: service.Limits{perSecond, perMin},
		APIs:    map[string]service.Limits{"bulk": {perMinute(1000, hotlimit.PerPair), hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second}}},
	}, clock)
	require.NoError(t, err)
	for i := range 3 {
		d, c := s.TakePolicy("u", "x", 1)
		require.True(t, d.Allowed, "request %d", i+1)
		assert.Equal(t, perMin, c, "request %d: %d/3 left against %d/100", i+1, 2-i, 99-i)
	}
	d, c := s.TakePolicy("u", "x", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, perMin, c, "the 4th request is denied by the 3/min limit")
	assert.Equal(t, 3, d.Limit)
	assert.Zero(t, d.Remaining)

	// The token bucket denies a burst of 11: it is named though listed last.
	d, c = s.TakePolicy("u", "bulk", 11)
	assert.False(t, d.Allowed)
	assert.Equal(t, 10, c.Limit)
	d, c = s.TakePolicy("u", "bulk", 9)
	assert.True(t, d.Allowed)
	assert.Equal(t, 10, c.Limit, "1/10 left against 991/1000")
	assert.Equal(t, 1, d.Remaining)
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.TakePolicy("u", "x", 1) }))
}

// TestKeysBuiltInReusedBuffersStayDistinct: the in-memory limiters are asked
// under keys built in a recycled buffer; a pair's state must stay under its
// own key when the buffer is reused for other pairs of the same length.
func TestKeysBuiltInReusedBuffersStayDistinct(t *testing.T) {
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.FixedWindow, hotlimit.SlidingLog, hotlimit.GCRA, hotlimit.SlidingCounter} {
		t.Run(alg.String(), func(t *testing.T) {
			s, _ := newService(t, hotlimit.Config{Algorithm: alg, Limit: 100, Window: time.Minute})
			const pairs = 500
			for i := range pairs {
				for range i%5 + 1 {
					require.True(t, s.Allow(fmt.Sprintf("u%03d", i), fmt.Sprintf("a%03d", i)))
				}
			}
			assert.Equal(t, pairs, s.Len())
			for i := range pairs {
				d := s.Take(fmt.Sprintf("u%03d", i), fmt.Sprintf("a%03d", i), 0)
				assert.Equal(t, 100-(i%5+1), d.Remaining, "pair %d", i)
			}
		})
	}
}
