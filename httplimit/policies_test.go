package httplimit

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

	ps := newPolicies(PolicyName)
	pa, pb := ps.get(a), ps.get(b)
	for range 3 {
		assert.Same(t, pa, ps.get(a))
		assert.Same(t, pb, ps.get(b))
	}
	assert.Equal(t, a, pa.config)
	assert.Equal(t, b, pb.config)
	assert.NotEqual(t, pa.field, pb.field)
}

func TestPolicyCacheStartsOverWhenFull(t *testing.T) {
	ps := newPolicies(PolicyName)
	first := ps.get(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second})
	for i := range maxCachedPolicies + 10 {
		c := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: i + 2, Window: time.Second}
		assert.Equal(t, c, ps.get(c).config)
		assert.LessOrEqual(t, len(ps.snap.Load().all), maxCachedPolicies)
	}
	again := ps.get(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Second})
	assert.Equal(t, first.field, again.field, "an evicted policy is formatted again, identically")
}
