package redislimit

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestScriptsReadScoresByArithmetic: a score that ZRANGE ... WITHSCORES
// returns is text in a form Redis does not promise ("1000000000" from Redis
// 7, "1e+09" from miniredis), which every script reads by arithmetic (score
// + 0), as Lua 5.1 reads any numeral, never by tonumber: the tonumber of
// gopher-lua, the Lua of miniredis, reads no exponent without a point, and
// a sliding log read so on miniredis took its own set for someone else's,
// deleted it and admitted every request. Real Redis reads both forms, so
// only the scripts' text tells.
func TestScriptsReadScoresByArithmetic(t *testing.T) {
	withScores := regexp.MustCompile(`(\w+)\s*=\s*redis\.call\('ZRANGE'[^\n]*'WITHSCORES'\)`)
	sources := map[string]string{
		"prelude": prelude, "state": stateLua, "tokenbucket": tokenBucketLua, "fixedwindow": fixedWindowLua,
		"slidinglog": slidingLogLua, "gcra": gcraLua, "slidingcounter": slidingCounterLua,
	}
	found := 0
	for name, src := range sources {
		for _, m := range withScores.FindAllStringSubmatch(src, -1) {
			found++
			tonumber := regexp.MustCompile(`tonumber\(\s*` + m[1] + `\s*\[`)
			require.False(t, tonumber.MatchString(src), "%s reads a score of %s with tonumber", name, m[1])
		}
	}
	require.Equal(t, 2, found, "the sliding log reads the newest score and a denial's oldest")
}
