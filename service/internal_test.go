package service

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

func TestOneLimiterPerDistinctConfig(t *testing.T) {
	def := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}
	other := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	s, err := New(def)
	require.NoError(t, err)
	require.NoError(t, s.ConfigureUser("a", other))
	require.NoError(t, s.ConfigureAPI("b", other))
	require.NoError(t, s.ConfigureUserAPI("c", "d", def))
	r := s.rules.Load()
	assert.Len(t, r.limiters, 2)
	assert.Same(t, s.rules.Load().resolve("a", "x").lim, s.rules.Load().resolve("y", "b").lim)
	assert.Same(t, s.rules.Load().resolve("c", "d").lim, s.rules.Load().resolve("q", "r").lim)

	// A limiter no rule uses any more is dropped.
	require.NoError(t, s.ConfigureUser("a", def))
	require.NoError(t, s.ConfigureAPI("b", def))
	assert.Len(t, s.rules.Load().limiters, 1)
}

func FuzzPairKeyIsInjective(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("a\x00", "b", "a", "\x00b")
	f.Add("", "", "", "")
	f.Add("1:a", "b", "1", ":a|b")
	f.Add("a|", "b", "a", "|b")
	f.Fuzz(func(t *testing.T, u1, a1, u2, a2 string) {
		same := u1 == u2 && a1 == a2
		assert.Equal(t, same, pairKey(u1, a1) == pairKey(u2, a2), "(%q,%q) vs (%q,%q)", u1, a1, u2, a2)
		for _, k := range []string{stateKey(hotlimit.PerUser, u1, a1), stateKey(hotlimit.PerAPI, u1, a1), globalKey} {
			assert.NotEqual(t, k, pairKey(u2, a2), "a pair key is no other scope's key")
		}
		assert.NotEqual(t, stateKey(hotlimit.PerUser, u1, a1), stateKey(hotlimit.PerAPI, u2, a2))
	})
}

func TestPairKeyIsReadable(t *testing.T) {
	assert.Equal(t, "3:zed|GET /pay", pairKey("zed", "GET /pay"))
	assert.Equal(t, "0:|", pairKey("", ""))
	assert.Equal(t, "12:a|b:c|d-e:f-|g|/", pairKey("a|b:c|d-e:f-", "g|/"))
	assert.Equal(t, "user|carol", stateKey(hotlimit.PerUser, "carol", "x"))
	assert.Equal(t, "api|GET /pay", stateKey(hotlimit.PerAPI, "carol", "GET /pay"))
	assert.Equal(t, "global", stateKey(hotlimit.Global, "carol", "GET /pay"))
}

func TestReplaceReusesLimitersAndRules(t *testing.T) {
	a, b, c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second},
		hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second},
		hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 7, Window: time.Second}
	s, err := NewFromRules(Rules{Default: Limits{a}, Users: map[string]Limits{"u": {b}, "m": {a, b}}})
	require.NoError(t, err)
	first := s.rules.Load()
	require.NoError(t, s.Replace(Rules{Default: Limits{a}, APIs: map[string]Limits{"x": {c}, "y": {b}},
		Pairs: map[Pair]Limits{{"p", "q"}: {a, b}}}))
	next := s.rules.Load()
	require.NotNil(t, first.users["m"].multi)
	assert.Same(t, first.users["m"].multi, next.pairs[Pair{"p", "q"}].multi, "same limits, same rule")
	assert.NotSame(t, first, next)
	assert.Same(t, first.limiters[a], next.limiters[a])
	assert.Same(t, first.limiters[b], next.limiters[b])
	assert.Same(t, first.def.lim, next.def.lim, "same limits, same limiter")
	assert.Same(t, first.users["u"].lim, next.apis["y"].lim)
	assert.Equal(t, `users["u"]`, first.users["u"].name, "each entry is named for the observer")
	assert.Equal(t, `apis["y"]`, next.apis["y"].name)
	assert.Equal(t, "default", next.def.name)
	assert.Len(t, next.limiters, 3)

	require.NoError(t, s.Replace(Rules{Default: Limits{c}}))
	assert.Len(t, s.rules.Load().limiters, 1, "a and b dropped")
	assert.Same(t, next.limiters[c], s.rules.Load().limiters[c])
}

func TestLimitsKeyIsInjective(t *testing.T) {
	x := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 2, Burst: 3}
	y := hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: 23}
	keys := map[string]Limits{}
	for _, ls := range []Limits{{x}, {y}, {x, y}, {y, x}, {x, x}, {{Algorithm: 1, Limit: math.MaxInt}}, {{Algorithm: 1, Limit: -1}}} {
		k := limitsKey(ls)
		_, dup := keys[k]
		assert.False(t, dup, "%v", ls)
		keys[k] = ls
	}
}

func TestKeyBufBuildsStateKeys(t *testing.T) {
	kb := getKeyBuf()
	defer kb.put()
	for _, user := range []string{"", "z", "zed", strings.Repeat("u", 9), strings.Repeat("u", 10), strings.Repeat("u", 99), strings.Repeat("u", 100), strings.Repeat("u", 5000)} {
		for _, scope := range []hotlimit.Scope{hotlimit.PerPair, hotlimit.PerUser, hotlimit.PerAPI, hotlimit.Global} {
			assert.Equal(t, stateKey(scope, user, "GET /pay"), kb.key(scope, user, "GET /pay"), "%v, user of %d bytes", scope, len(user))
		}
	}
}

// plainLimiter is a factory's limiter that may keep the keys it is given and
// reports no Len: the service asks it under cached keys.
type plainLimiter struct{}

func (plainLimiter) Allow(string) bool { return true }
func (plainLimiter) Take(_ string, n int) hotlimit.Decision {
	return hotlimit.Decision{Allowed: n >= 0, Limit: 1, Remaining: 1}
}

func TestKeyCacheOfFactoryLimitersIsBounded(t *testing.T) {
	factory := func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) { return plainLimiter{}, nil }
	s, err := New(hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second}, hotlimit.WithFactory(factory), hotlimit.WithAutoSweep(0))
	require.NoError(t, err)
	require.False(t, s.rules.Load().def.transient, "a factory's limiter gets keys of its own")
	peak := 0
	for i := range 20 * minKeyCache {
		s.Allow("user"+strconv.Itoa(i), "GET /")
		peak = max(peak, s.keys.m.Size())
	}
	assert.LessOrEqual(t, peak, minKeyCache, "the limiters hold no keys, so the cache is emptied at its least threshold")
	k, ok := s.keys.m.Load(keyName{scope: hotlimit.PerPair, user: "user1", api: "GET /"})
	if ok {
		assert.Equal(t, "5:user1|GET /", k)
	}
	// The loop's last insertion may have emptied it: fill it again, so that
	// the check below sees what Sweep did.
	for i := range 10 {
		s.Allow("late"+strconv.Itoa(i), "GET /")
	}
	require.Equal(t, 10, s.keys.m.Size())
	s.Sweep()
	assert.Zero(t, s.keys.m.Size(), "Sweep empties it")
}

// heldLimiter is a plainLimiter that reports holding held keys, and counts
// the calls of Len in lens.
type heldLimiter struct {
	plainLimiter
	held int
	lens *atomic.Int64
}

func (l heldLimiter) Len() int   { l.lens.Add(1); return l.held }
func (l heldLimiter) Sweep() int { return 0 }

// TestKeyCacheHoldsAboutTwiceTheLimitersKeys: under a flood of new pairs,
// the cache of a factory's keys stays within twice the keys its limiters
// hold, and its least threshold, however many pairs come; and it counts
// the limiters' keys (a visit of every limiter) once per least threshold's
// insertions or so, not at every insertion.
func TestKeyCacheHoldsAboutTwiceTheLimitersKeys(t *testing.T) {
	const held = 3 * minKeyCache / 2
	var lens atomic.Int64
	factory := func(hotlimit.Config, ...hotlimit.Option) (hotlimit.Limiter, error) {
		return heldLimiter{held: held, lens: &lens}, nil
	}
	s, err := New(hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second}, hotlimit.WithFactory(factory), hotlimit.WithAutoSweep(0))
	require.NoError(t, err)
	require.Equal(t, held, s.Len())
	lens.Store(0)
	peak := 0
	const pairs = 20 * held
	for i := range pairs {
		s.Allow("user"+strconv.Itoa(i), "GET /")
		peak = max(peak, s.keys.m.Size())
	}
	assert.Greater(t, peak, 2*held, "the cache grows past twice the keys before it is emptied")
	assert.LessOrEqual(t, peak, 2*held+minKeyCache, "and no further than the least threshold past that")
	assert.LessOrEqual(t, lens.Load(), int64(2*pairs/minKeyCache), "the limiters' keys are counted now and then")
}

func TestStackKeyBuildsStateKeys(t *testing.T) {
	names := []string{"", "z", "zed", strings.Repeat("u", 9), strings.Repeat("u", 10), strings.Repeat("u", 99), strings.Repeat("u", 100), strings.Repeat("u", 5000)}
	// Lengths around the edges of both buffers, for every scope's overhead.
	for _, edge := range []int{stackKeyLen, longKeyLen} {
		for n := edge - 12; n <= edge+1; n++ {
			names = append(names, strings.Repeat("n", n))
		}
	}
	fits := map[string]int{}
	for _, user := range names {
		for _, api := range []string{"", "GET /pay", strings.Repeat("a", 30), strings.Repeat("a", stackKeyLen-1), strings.Repeat("a", longKeyLen-1)} {
			for _, scope := range []hotlimit.Scope{hotlimit.PerPair, hotlimit.PerUser, hotlimit.PerAPI, hotlimit.Global} {
				want := stateKey(scope, user, api)
				var sk stackKey
				var lk longKey
				for _, b := range []struct {
					name string
					max  int
					key  func(hotlimit.Scope, string, string) (string, bool)
				}{{"stackKey", stackKeyLen, sk.key}, {"longKey", longKeyLen, lk.key}} {
					k, ok := b.key(scope, user, api)
					if !ok {
						assert.Greater(t, len(want), b.max, "%s: %v, user of %d bytes, api of %d: a key that fits is refused", b.name, scope, len(user), len(api))
						continue
					}
					fits[b.name]++
					assert.Equal(t, want, k, "%s: %v, user of %d bytes, api of %d", b.name, scope, len(user), len(api))
				}
			}
		}
	}
	assert.Greater(t, fits["stackKey"], 100, "many keys of the table fit")
	assert.Greater(t, fits["longKey"], fits["stackKey"], "more fit the long one")
}

func TestAllowOfOneLimitBuildsItsKeyOnTheStack(t *testing.T) {
	const limit = 1000
	frozen := hotlimit.WithClock(func() int64 { return int64(time.Hour) })
	s, err := New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: limit, Window: time.Hour}, frozen)
	require.NoError(t, err)
	require.True(t, s.rules.Load().def.fast)
	require.True(t, s.Allow("user", "GET /pay"))
	user := strings.Repeat("u", 30) // with the api, the longest key that fits
	api := strings.Repeat("a", stackKeyLen-len(user)-4)
	require.Len(t, stateKey(hotlimit.PerPair, user, api), stackKeyLen)
	long := user + "x"                      // in a longKey
	huge := strings.Repeat("h", longKeyLen) // in the pool's buffer
	require.True(t, s.Allow(user, api))
	require.True(t, s.Allow(long, api))
	require.True(t, s.Allow(huge, api))
	// Each pair is now asked 101 times more: AllocsPerRun warms up once.
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow("user", "GET /pay") }))
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow(user, api) }), "a key of stackKeyLen bytes")
	assert.Zero(t, testing.AllocsPerRun(100, func() { s.Allow(long, api) }), "a longer key, in a longKey")
	pooled := testing.AllocsPerRun(100, func() { s.Allow(huge, api) })
	if !raceDetector { // whose pool drops buffers on purpose
		assert.Zero(t, pooled, "a key longer than longKeyLen, in the pool's buffer")
	}
	for _, u := range []string{user, long, huge} { // Take(…, 0) reports and changes nothing
		allocs := testing.AllocsPerRun(100, func() { s.Take(u, api, 0) })
		if u != huge || !raceDetector {
			assert.Zero(t, allocs, "Take, a user of %d bytes", len(u))
		}
	}
	// The limiter kept a copy of each key, not the stack's bytes: the pairs
	// are still found under their keys.
	assert.Equal(t, 4, s.Len())
	for _, p := range [][2]string{{"user", "GET /pay"}, {user, api}, {long, api}, {huge, api}} {
		d := s.Take(p[0], p[1], 0)
		assert.Equal(t, limit-1-101, d.Remaining, "%d-byte user: its state is kept under its own key", len(p[0]))
	}
}

func TestAllowUnderAnObserverSkipsTheDurations(t *testing.T) {
	obs := hotlimit.WithObserver(hotlimit.ObserverFunc(func(hotlimit.Event) {}))
	for a, want := range map[hotlimit.Algorithm]bool{
		hotlimit.TokenBucket: true, hotlimit.GCRA: true, hotlimit.FixedWindow: true, hotlimit.SlidingCounter: true,
		hotlimit.SlidingLog: true, hotlimit.Unlimited: false,
	} {
		c := hotlimit.Config{Algorithm: a, Limit: 10, Window: time.Second}
		if a == hotlimit.Unlimited {
			c = hotlimit.Config{Algorithm: a}
		}
		s, err := New(c, obs)
		require.NoError(t, err)
		ru := s.rules.Load().def
		assert.False(t, ru.fast, "%v: an observer must hear of every decision", a)
		assert.Equal(t, want, ru.counted != nil, "%v: Allow asks AllowRemaining", a)
		quiet, err := New(c)
		require.NoError(t, err)
		assert.Nil(t, quiet.rules.Load().def.counted, "%v: without an observer, Allow asks Allow", a)
		assert.True(t, quiet.rules.Load().def.fast, "%v", a)
	}
}

func TestNearMaxClassifiesAsClassify(t *testing.T) {
	for _, limit := range []int{1, 3, 5, 7, 10, 100, 1 << 20, math.MaxInt32, int(min(int64(math.MaxInt), 1<<53-1))} {
		for _, near := range []float64{0, 0.1, 0.2, 1.0 / 3, 0.5, 0.99, 1, math.NaN()} {
			m := nearMax(limit, near)
			for _, r := range []int{0, 1, m - 1, m, m + 1, limit / 5, limit/5 + 1, limit / 3, limit/3 + 1, limit - 1, limit} {
				if r < 0 {
					continue
				}
				d := hotlimit.Decision{Allowed: true, Limit: limit, Remaining: r}
				want := hotlimit.Classify(d, false, near) == hotlimit.OutcomeNearLimit
				assert.Equal(t, want, r <= m, "limit %d, share %v, remaining %d (nearMax %d)", limit, near, r, m)
			}
		}
	}
}

// TestLimitsKeyEncodesEveryConfigField: Replace reuses the rule of equal
// limitsKeys, so a Config field that limitsKey leaves out would make a
// Replace that changes only that field keep the old rule. Each field, set
// alone, must change the key (a field added to Config later included).
func TestLimitsKeyEncodesEveryConfigField(t *testing.T) {
	var zero hotlimit.Config
	typ := reflect.TypeOf(zero)
	for i := range typ.NumField() {
		var c hotlimit.Config
		f := reflect.ValueOf(&c).Elem().Field(i)
		switch f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			f.SetInt(1)
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			f.SetUint(1)
		default:
			t.Fatalf("Config.%s is a %v: teach limitsKey and this test about it", typ.Field(i).Name, f.Kind())
		}
		assert.NotEqual(t, limitsKey(Limits{zero}), limitsKey(Limits{c}), "Config.%s is not in limitsKey", typ.Field(i).Name)
	}
}
