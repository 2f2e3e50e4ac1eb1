package redislimit

import (
	"math/bits"
	"strconv"
	"testing"
	"time"

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
		readmecheck.Claim{Pattern: "a limit or burst stays below 2\\^(\\d+) on a 64-bit platform", Want: pow2(exact)},
		readmecheck.Claim{Pattern: "A window stays within 2\\^(\\d+) ticks", Want: pow2(exact >> 2)},
		readmecheck.Claim{Pattern: "microseconds, but (\\d+) days under `hotlimit.WithClock`", Want: strconv.FormatInt(int64(exact>>2)/int64(24*time.Hour), 10)})
}

// TestDocNumbersAreTheLimiters: the defaults and ranges the package's doc
// comments give (go doc -all) are the values a Limiter is built and checked
// with, as TestREADMEDefaultsAreTheLimiters checks the README's.
func TestDocNumbersAreTheLimiters(t *testing.T) {
	d := defaults()
	pow2 := func(n int64) string {
		require.Equal(t, 1, bits.OnesCount64(uint64(n)), "%d is a power of two", n)
		return strconv.Itoa(bits.Len64(uint64(n)) - 1)
	}
	days := func(ns int64) string { return strconv.FormatInt(ns/int64(24*time.Hour), 10) }
	readmecheck.CheckClaims(t, readmecheck.GoDoc(t, "."),
		readmecheck.Claim{Pattern: `the timeout of \[?WithTimeout\]?, (\d+) ms by default`, Want: strconv.FormatInt(DefaultTimeout.Milliseconds(), 10)},
		readmecheck.Claim{Pattern: `on by default: (\d+) errors in a row`, Want: strconv.Itoa(d.failures)},
		readmecheck.Claim{Pattern: `errors in a row open it for (\d+) s`, Want: strconv.FormatFloat(d.cooldown.Seconds(), 'g', -1, 64)},
		readmecheck.Claim{Pattern: `The default is (\d+) failures and a \d+ s cooldown`, Want: strconv.Itoa(d.failures)},
		readmecheck.Claim{Pattern: `The default is \d+ failures and a (\d+) s cooldown`, Want: strconv.FormatFloat(d.cooldown.Seconds(), 'g', -1, 64)},
		readmecheck.Claim{Pattern: `The default is (\d+) calls and \d+ pipelines`, Want: strconv.Itoa(d.batch)},
		readmecheck.Claim{Pattern: `The default is \d+ calls and (\d+) pipelines`, Want: strconv.Itoa(d.flushers)},
		readmecheck.Claim{Pattern: `"(\S+)" by default\) and the Config keep`, Want: d.prefix},
		readmecheck.Claim{Pattern: `the default is "(\S+)"\. Limiters sharing a Redis`, Want: d.prefix},
		readmecheck.Claim{Pattern: `outside ±2\^(\d+) ns`, Want: pow2(clockRange)},
		readmecheck.Claim{Pattern: `\(about ±(\d+) days\)`, Want: days(clockRange)},
		readmecheck.Claim{Pattern: `a window of at most 2\^(\d+) ticks`, Want: pow2(exact >> 2)},
		readmecheck.Claim{Pattern: `but (\d+) days of a \[?hotlimit.WithClock`, Want: days(exact >> 2)},
		readmecheck.Claim{Pattern: `a limit and burst below 2\^(\d+)`, Want: pow2(exact)},
		readmecheck.Claim{Pattern: `window × burst below 2\^(\d+) ticks`, Want: pow2(exact)},
		readmecheck.Claim{Pattern: `about a minute \((\d+) s at least`, Want: strconv.FormatFloat((nodeIdle - nodeIdle/4).Seconds(), 'g', -1, 64)})
}
