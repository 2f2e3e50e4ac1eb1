package redislimit

import (
	"math/bits"
	"strconv"
	"testing"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
	"github.com/stretchr/testify/require"
)

// TestREADMEDefaultsAreTheLimiters: the defaults and ranges README.md's
// "Across machines" gives in prose (the timeout, the breaker, the batch,
// the clock readings and the limits Redis's arithmetic keeps exact) are
// the values a Limiter is built with.
func TestREADMEDefaultsAreTheLimiters(t *testing.T) {
	d := defaults()
	pow2 := func(n int64) string {
		require.Equal(t, 1, bits.OnesCount64(uint64(n)), "%d is a power of two", n)
		return strconv.Itoa(bits.Len64(uint64(n)) - 1)
	}
	readmecheck.CheckClaims(t, readmecheck.Prose(t, "../README.md", "Across machines"),
		readmecheck.Claim{Pattern: "`redislimit.DefaultTimeout` \\((\\d+) ms;", Want: strconv.FormatInt(DefaultTimeout.Milliseconds(), 10)},
		readmecheck.Claim{Pattern: "default (\\d+) errors in a row, \\d+ s cooldown", Want: strconv.Itoa(d.failures)},
		readmecheck.Claim{Pattern: "default \\d+ errors in a row, (\\d+) s cooldown", Want: strconv.FormatFloat(d.cooldown.Seconds(), 'g', -1, 64)},
		readmecheck.Claim{Pattern: "`WithBatch`, default (\\d+) calls, \\d+ pipelines in flight", Want: strconv.Itoa(d.batch)},
		readmecheck.Claim{Pattern: "`WithBatch`, default \\d+ calls, (\\d+) pipelines in flight", Want: strconv.Itoa(d.flushers)},
		readmecheck.Claim{Pattern: "readings within ±2\\^(\\d+) ns", Want: pow2(clockRange)},
		readmecheck.Claim{Pattern: "a limit or burst stays below 2\\^(\\d+) on a 64-bit platform", Want: pow2(exact)})
}
