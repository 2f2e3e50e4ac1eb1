package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestDocAndHelpNumbersAreTheCommands: the defaults and bounds that the
// command's package doc (go doc) and its -h text give are the values it
// runs with, as TestREADMEBoundsAreTheCommands checks the README's.
func TestDocAndHelpNumbersAreTheCommands(t *testing.T) {
	fs := newFlagSet(&flags{})
	def := func(name string) string { return fs.Lookup(name).DefValue }
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

	readmecheck.CheckClaims(t, readmecheck.GoDoc(t, "."),
		readmecheck.Claim{Pattern: `\[-grpc (\S+)\]`, Want: def("grpc")},
		readmecheck.Claim{Pattern: `\[-http (\S+)\]`, Want: def("http")},
		readmecheck.Claim{Pattern: `for the longer of -redis-timeout and (\d+) s past the servers' stop`, Want: secs(handlersGrace)},
		readmecheck.Claim{Pattern: `a PING, within (\d+) s`, Want: secs(redisStartup)},
		readmecheck.Claim{Pattern: `"(\w+)" \(the default, as the reference`, Want: def("redis-failure")})

	var help bytes.Buffer
	_, err := parse([]string{"-h"}, &help)
	require.Error(t, err)
	text := strings.Join(strings.Fields(help.String()), " ")
	readmecheck.CheckClaims(t, text,
		readmecheck.Claim{Pattern: `the longer of -redis-timeout and (\d+) s, for their leases`, Want: secs(handlersGrace)},
		readmecheck.Claim{Pattern: `polled, at least (\d+)ms`, Want: ms(minReload)})

	// The bounds on limit overrides are envoyrls's, whose doc comments
	// TestDocNumbersAreTheCode checks against its constants.
	envoy := readmecheck.GoDoc(t, "../..")
	find := func(pattern string) []string {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(envoy)
		require.NotNil(t, m, "envoyrls's doc says %s", pattern)
		return m[1:]
	}
	most := find(`past (\d+) of them a request with yet another`)[0]
	overrides := find(`\((\d+) overrides at n = 1,000,000, (\d+) at 100,000, (\d+) at 1024 or less`)
	sizes := find(`\((\d+ MB) at 2\^20, ([\d.]+ MB) at 100,000, (\d+ KB) at 1024 or less`)
	readmecheck.CheckClaims(t, readmecheck.GoDoc(t, "."),
		readmecheck.Claim{Pattern: `hotlimitd keeps at most (\d+) distinct ones`, Want: most},
		readmecheck.Claim{Pattern: `\((\d+) at -max-keys 1000000, \d+ at 100000, \d+ at 1024 or less`, Want: overrides[0]},
		readmecheck.Claim{Pattern: `\(\d+ at -max-keys 1000000, (\d+) at 100000, \d+ at 1024 or less`, Want: overrides[1]},
		readmecheck.Claim{Pattern: `\(\d+ at -max-keys 1000000, \d+ at 100000, (\d+) at 1024 or less`, Want: overrides[2]},
		readmecheck.Claim{Pattern: `(\d+ MB) per policy at -max-keys 1000000`, Want: sizes[0]},
		readmecheck.Claim{Pattern: `per policy at -max-keys 1000000, ([\d.]+ MB) at 100000`, Want: sizes[1]},
		readmecheck.Claim{Pattern: `MB at 100000, (\d+ KB) at 1024 or less`, Want: sizes[2]})
	readmecheck.CheckClaims(t, text,
		readmecheck.Claim{Pattern: `\((\d+) at 1000000, \d+ at 1024 or less\)`, Want: overrides[0]},
		readmecheck.Claim{Pattern: `\(\d+ at 1000000, (\d+) at 1024 or less\)`, Want: overrides[2]})
}
