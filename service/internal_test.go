package service

import (
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
	assert.Same(t, s.route("a", "x").lim, s.route("y", "b").lim)
	assert.Same(t, s.route("c", "d").lim, s.route("q", "r").lim)

	// A limiter no rule uses any more is dropped.
	require.NoError(t, s.ConfigureUser("a", def))
	require.NoError(t, s.ConfigureAPI("b", def))
	assert.Len(t, s.rules.Load().limiters, 1)
}

func FuzzPairKeyIsInjective(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("a\x00", "b", "a", "\x00b")
	f.Add("", "", "", "")
	f.Fuzz(func(t *testing.T, u1, a1, u2, a2 string) {
		same := u1 == u2 && a1 == a2
		assert.Equal(t, same, pairKey(u1, a1) == pairKey(u2, a2), "(%q,%q) vs (%q,%q)", u1, a1, u2, a2)
	})
}
