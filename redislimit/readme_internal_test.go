package redislimit

import (
	"math/bits"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMEDefaultsAreTheLimiters: the defaults and ranges README.md's
// "Across machines" gives in prose (the timeout, the breaker, the batch,
// the clock readings and the limits Redis's arithmetic keeps exact) are
// the values a Limiter is built with.
func TestREADMEDefaultsAreTheLimiters(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := string(md)
	start := strings.Index(section, "## Across machines")
	require.GreaterOrEqual(t, start, 0)
	section = section[start+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	section = strings.Join(strings.Fields(section), " ") // prose wraps anywhere

	d := defaults()
	pow2 := func(n int64) string {
		require.Equal(t, 1, bits.OnesCount64(uint64(n)), "%d is a power of two", n)
		return strconv.Itoa(bits.Len64(uint64(n)) - 1)
	}
	for _, c := range []struct {
		re, want string
	}{
		{"`redislimit.DefaultTimeout` \\((\\d+) ms;", strconv.FormatInt(DefaultTimeout.Milliseconds(), 10)},
		{"default (\\d+) errors in a row, \\d+ s cooldown", strconv.Itoa(d.failures)},
		{"default \\d+ errors in a row, (\\d+) s cooldown", strconv.FormatFloat(d.cooldown.Seconds(), 'g', -1, 64)},
		{"`WithBatch`, default (\\d+) calls, \\d+ pipelines in flight", strconv.Itoa(d.batch)},
		{"`WithBatch`, default \\d+ calls, (\\d+) pipelines in flight", strconv.Itoa(d.flushers)},
		{"readings within ±2\\^(\\d+) ns", pow2(clockRange)},
		{"a limit or burst stays below 2\\^(\\d+) on a 64-bit platform", pow2(exact)},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(section)
		if assert.NotNil(t, m, "README.md's \"Across machines\" says %s", c.re) {
			assert.Equal(t, c.want, m[1], "README.md: %s", c.re)
		}
	}
}
