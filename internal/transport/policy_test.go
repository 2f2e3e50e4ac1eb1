package transport

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
)

func TestPolicyCacheSurvivesFoldCollisions(t *testing.T) {
	a := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 1, Window: time.Second}
	b := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2}
	b.Window = time.Duration(fold(a) ^ fold(b)) // b.Window ^ ... = a's fold
	require.Equal(t, fold(a), fold(b), "the two Configs share a fold")
	require.NotEqual(t, a, b)

	ps := NewPolicies(PolicyName)
	pa, pb := ps.Get(a), ps.Get(b)
	for range 3 {
		assert.Same(t, pa, ps.Get(a))
		assert.Same(t, pb, ps.Get(b))
	}
	assert.Equal(t, a, pa.Config)
	assert.Equal(t, b, pb.Config)
	assert.NotEqual(t, pa.Field, pb.Field)
}

func TestPolicyCacheStartsOverWhenFull(t *testing.T) {
	ps := NewPolicies(nil)
	first := ps.Get(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second})
	for i := range MaxCachedPolicies + 10 {
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: i + 2, Window: time.Second}
		assert.Equal(t, c, ps.Get(c).Config)
		assert.LessOrEqual(t, len(ps.snap.Load().all), MaxCachedPolicies)
	}
	again := ps.Get(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second})
	assert.Equal(t, first.Field, again.Field, "an evicted policy is formatted again, identically")
}

func TestAppendRateLimit(t *testing.T) {
	p := NewPolicy(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: 1500 * time.Millisecond}, PolicyName)
	assert.Equal(t, `"fixedwindow-3-1.5s";q=3;w=2`, p.Field)
	b, rFrom, rTo, tFrom, tTo := p.AppendRateLimit([]byte("x"), hotlimit.Decision{Remaining: -1, ResetAfter: 1001 * time.Millisecond})
	assert.Equal(t, `x"fixedwindow-3-1.5s";r=0;t=2`, string(b))
	assert.Equal(t, "0", string(b[rFrom:rTo]))
	assert.Equal(t, "2", string(b[tFrom:tTo]))
}

func TestKind(t *testing.T) {
	for _, tc := range []struct{ key, kind string }{
		{"ip:192.0.2.1", KindIP},
		{"ip:2001:db8::/64", KindIP},
		{"peer:@", KindPeer},
		{Tag(HeaderKind("X-API-Key"), "203.0.113.9"), "header:x-api-key"},
		{"header:x-api-key:a:b", "header:x-api-key"},
		{"context:main.user:alice", "context:main.user"},
		{"alice", ""},
	} {
		assert.Equal(t, tc.kind, Kind(tc.key), tc.key)
	}
}

func TestQuota(t *testing.T) {
	tb := func(limit int, window time.Duration, burst int) hotlimit.Config {
		return hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: limit, Window: window, Burst: burst}
	}
	for _, tc := range []struct {
		c hotlimit.Config
		q int
		w int64
	}{
		{tb(5, time.Second, 0), 5, 1},
		{tb(5, time.Second, 20), 20, 4},   // 20 tokens at 5 per second: 4 s
		{tb(5, time.Second, 2), 2, 1},     // 0.4 s, rounded up
		{tb(3, time.Second, 4), 4, 2},     // 1.33 s, rounded up
		{tb(3, 3*time.Second+1, 1), 1, 2}, // 1 s and a third of a nanosecond, rounded up
		{tb(60, time.Minute, 90), 90, 90}, // 1 per second
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Second, Burst: 30}, 30, 3},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: 1500 * time.Millisecond, Burst: 9}, 3, 2}, // no burst in a window
		{hotlimit.Config{Algorithm: hotlimit.Unlimited}, 0, 1},
	} {
		q, w := Quota(tc.c)
		assert.Equal(t, tc.q, q, "%+v", tc.c)
		assert.Equal(t, tc.w, w, "%+v", tc.c)
	}
	// Factors whose product overflows 64 bits are clamped, not wrapped.
	q, w := Quota(tb(1, time.Duration(math.MaxInt64), math.MaxInt32))
	assert.Equal(t, math.MaxInt32, q)
	assert.Equal(t, CeilSeconds(math.MaxInt64), w)
	// A high word equal to the limit is an overflowing quotient too (one
	// bits.Div64 would panic on), and so is a quotient past MaxInt64.
	for _, c := range []hotlimit.Config{tb(1, time.Duration(math.MaxInt64), 3), tb(3, time.Duration(math.MaxInt64), 5)} {
		q, w := Quota(c)
		assert.Equal(t, c.Burst, q, "%+v", c)
		assert.Equal(t, CeilSeconds(math.MaxInt64), w, "%+v", c)
	}
}

func TestBurstChangesThePolicyName(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}
	assert.Equal(t, "tokenbucket-5-1s", PolicyName(c))
	c.Burst = 5
	assert.Equal(t, "tokenbucket-5-1s", PolicyName(c), "a burst equal to the limit is no burst")
	c.Burst = 20
	assert.Equal(t, "tokenbucket-5-1s-burst20", PolicyName(c))
	p := NewPolicy(c, PolicyName)
	assert.Equal(t, `"tokenbucket-5-1s-burst20";q=20;w=4`, p.Field)
	assert.Equal(t, "20", p.Limit)
}

func TestRateText(t *testing.T) {
	for _, tc := range []struct {
		c    hotlimit.Config
		want string
	}{
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}, "3 requests per 1s"},
		{hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 1, Window: time.Minute}, "1 request per 1m"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 5}, "5 requests per 1s"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 20}, "5 requests per 1s, bursts of 20"},
		{hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 10, Window: time.Second, Burst: 2}, "10 requests per 1s, bursts of 2"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second, Scope: hotlimit.PerPair}, "3 requests per 1s"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second, Scope: hotlimit.PerUser}, "3 requests per 1s, per user, across APIs"},
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second, Scope: hotlimit.PerAPI}, "3 requests per 1s, shared by every user of the API"},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second, Burst: 20, Scope: hotlimit.Global}, "5 requests per 1s, bursts of 20, shared by every user"},
	} {
		assert.Equal(t, tc.want, RateText(tc.c), "%+v", tc.c)
		q, _ := Quota(tc.c)
		if q != tc.c.Limit {
			assert.Contains(t, RateText(tc.c), "bursts of "+strconv.Itoa(q), "the burst is the advertised q")
		}
	}
}

// TestAdvertisedLeavesOutUnlimitedAndShadowLimits: the gateways advertise
// a limit that enforces a quota, whatever its scope, and neither an
// allow-listed caller's nor one in shadow mode.
func TestAdvertisedLeavesOutUnlimitedAndShadowLimits(t *testing.T) {
	c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second}
	assert.True(t, Advertised(c))
	c.Scope = hotlimit.PerUser
	assert.True(t, Advertised(c))
	c.Shadow = true
	assert.False(t, Advertised(c), "a limit in shadow mode enforces nothing")
	assert.False(t, Advertised(hotlimit.Config{Algorithm: hotlimit.Unlimited}), "an allow-listed caller has no quota")
}

// TestWindowName: zero trailing units are dropped, and "µs" is spelled
// "us", so that a name sanitized into a header keeps its unit.
func TestWindowName(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Second:                        "1s",
		time.Minute:                        "1m",
		2 * time.Hour:                      "2h",
		90 * time.Minute:                   "1h30m",
		time.Hour + time.Second:            "1h0m1s",
		1500 * time.Millisecond:            "1.5s",
		500 * time.Microsecond:             "500us", // ASCII: a policy name is a Structured Field String
		time.Minute + 500*time.Millisecond: "1m0.5s",
	} {
		assert.Equal(t, want, WindowName(d), "%v", d)
	}
}

// TestInRuleScopesANameOnlyWhenAnotherLimitSharesIt: a rule's one limit of
// a user scope keeps its plain name; only a second limit of that name makes
// the scope part of it.
func TestInRuleScopesANameOnlyWhenAnotherLimitSharesIt(t *testing.T) {
	user := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser}
	ps := NewPolicies(nil)
	one := []hotlimit.Config{user}
	assert.Equal(t, "fixedwindow-10-1m", ps.InRule(user, 1, func(i int) hotlimit.Config { return one[i] }).Name)
	pair := user
	pair.Scope = hotlimit.PerPair
	two := []hotlimit.Config{pair, user}
	assert.Equal(t, "fixedwindow-10-1m-user", ps.InRule(user, 2, func(i int) hotlimit.Config { return two[i] }).Name)
}
