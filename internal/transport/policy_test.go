package transport

import (
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
