package envoyrls_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// TestIntegersPastInt64SayWhatTheFieldTakes: an integer that int64 cannot
// hold (the reference takes no other) is refused with a message true of the
// field it is given to: a number field names its range (requests_per_unit
// is a uint32, at most 4294967295), a boolean its two values, and a string
// field says where the integer lies (18446744073709551615 fits 64 unsigned
// bits: it is past int64's largest, not past 64 bits) and to quote it.
func TestIntegersPastInt64SayWhatTheFieldTakes(t *testing.T) {
	fields := []struct {
		key  string
		line int
		yaml func(n string) string
	}{
		{"requests_per_unit", 6, func(n string) string {
			return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: " + n + "\n"
		}},
		{"burst", 8, func(n string) string {
			return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      algorithm: TokenBucket\n      burst: " + n + "\n"
		}},
		{"shadow_mode", 4, func(n string) string { return "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: " + n + "\n" }},
		{"value", 4, func(n string) string { return "domain: d\ndescriptors:\n  - key: k\n    value: " + n + "\n" }},
		{"key", 3, func(n string) string { return "domain: d\ndescriptors:\n  - key: " + n + "\n" }},
	}
	intRange := "a burst's range, 0 to " + strconv.Itoa(math.MaxInt)
	want := map[string]map[string]string{
		"18446744073709551615": { // within uint64
			"requests_per_unit": "is outside a uint32's range, 0 to 4294967295:",
			"burst":             "is outside " + intRange + ":",
			"shadow_mode":       "is an integer, not a boolean: write true or false:",
			"value":             "is an integer past int64's largest, 9223372036854775807: quote it for a string:",
			"key":               "is an integer past int64's largest, 9223372036854775807: quote it for a string:",
		},
		"18446744073709551616": { // past uint64, tagged a float
			"requests_per_unit": "is outside a uint32's range, 0 to 4294967295:",
			"burst":             "is outside " + intRange + ":",
			"shadow_mode":       "is an integer, not a boolean: write true or false:",
			"value":             "is an integer past 64 bits: quote it for a string:",
			"key":               "is an integer past 64 bits: quote it for a string:",
		},
		"-9223372036854775809": { // below int64, tagged a float
			"requests_per_unit": "is outside a uint32's range, 0 to 4294967295:",
			"burst":             "is outside " + intRange + ":",
			"shadow_mode":       "is an integer, not a boolean: write true or false:",
			"value":             "is an integer below int64's least, -9223372036854775808: quote it for a string:",
			"key":               "is an integer below int64's least, -9223372036854775808: quote it for a string:",
		},
	}
	for n, byKey := range want {
		for _, f := range fields {
			_, err := envoyrls.ParseDomain("f.yaml", []byte(f.yaml(n)))
			require.Error(t, err, "%s %s", f.key, n)
			assert.ErrorIs(t, err, envoyrls.ErrConfig)
			assert.Contains(t, err.Error(), "error checking config: line "+strconv.Itoa(f.line)+": "+f.key+" "+n+" "+byKey[f.key], "%s %s", f.key, n)
		}
	}

	// A float: for a number field, an integer is the advice; for a string
	// field, quoting; an integer tagged a float that int64 holds is a float.
	for _, tc := range []struct{ yaml, want string }{
		{fields[0].yaml("5.5"), "requests_per_unit 5.5 is a float: write an integer:"},
		{fields[1].yaml("1e3"), "burst 1e3 is a float: write an integer:"},
		{fields[2].yaml("1.5"), "shadow_mode 1.5 is a float: write true or false:"},
		{fields[3].yaml("1.5"), "value 1.5 is a float: write an integer, or quote it for a string:"},
		{fields[0].yaml("!!float 5"), "requests_per_unit 5 is a float: write an integer:"},
	} {
		_, err := envoyrls.ParseDomain("f.yaml", []byte(tc.yaml))
		require.Error(t, err, tc.want)
		assert.Contains(t, err.Error(), tc.want)
		if !strings.Contains(tc.want, "value") {
			assert.NotContains(t, err.Error(), "quote", tc.want)
		}
	}
}

// TestWindowNumberSaysWriteADuration: a window written as a number too
// large for int64, or as a float, is told to be a Go duration: neither an
// integer nor a quoted number, the advice a string field takes, is one.
func TestWindowNumberSaysWriteADuration(t *testing.T) {
	conf := func(n string) string {
		return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      window: " + n + "\n      requests_per_unit: 5\n"
	}
	for _, n := range []string{"9223372036854775808", "18446744073709551616", "-9223372036854775809", "1.5", "!!float 5"} {
		_, err := envoyrls.ParseDomain("f.yaml", []byte(conf(n)))
		require.Error(t, err, n)
		assert.ErrorIs(t, err, envoyrls.ErrConfig)
		assert.Contains(t, err.Error(), "write a Go duration such as 90s or 1h30m:", n)
		assert.NotContains(t, err.Error(), "quote", n)
		assert.NotContains(t, err.Error(), "write an integer", n)
	}
}

// TestBurstRangeStartsAtZero: a burst int64 cannot hold is told the range a
// burst takes, from 0 (a burst must not be negative), not an int's, whose
// negative half the burst refuses too.
func TestBurstRangeStartsAtZero(t *testing.T) {
	for _, n := range []string{"-9223372036854775809", "9223372036854775808"} {
		_, err := envoyrls.ParseDomain("f.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n      algorithm: TokenBucket\n      burst: "+n+"\n"))
		require.Error(t, err, n)
		assert.ErrorIs(t, err, envoyrls.ErrConfig)
		assert.Contains(t, err.Error(), "burst "+n+" is outside a burst's range, 0 to "+strconv.Itoa(math.MaxInt)+":", n)
		assert.NotContains(t, err.Error(), strconv.Itoa(math.MinInt), n)
	}
}

// TestUnitAndAlgorithmNumbersSayWhatTheyTake: a unit or an algorithm written
// as a float, or as an integer too large for int64, is told the words the
// field takes: an integer or a quoted number, the advice a string field
// takes, names no unit and no algorithm either.
func TestUnitAndAlgorithmNumbersSayWhatTheyTake(t *testing.T) {
	for key, want := range map[string]string{
		"unit":      "write second, minute, hour, day, week, month or year:",
		"algorithm": "write TokenBucket, GCRA, FixedWindow, SlidingLog or SlidingCounter:",
	} {
		for _, n := range []string{"9223372036854775808", "-9223372036854775809", "1.5", "!!float 5"} {
			_, err := envoyrls.ParseDomain("f.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n      "+key+": "+n+"\n"))
			require.Error(t, err, "%s %s", key, n)
			assert.ErrorIs(t, err, envoyrls.ErrConfig)
			assert.Contains(t, err.Error(), "line 6: "+key+" ", "%s %s", key, n)
			assert.Contains(t, err.Error(), want, "%s %s", key, n)
			assert.NotContains(t, err.Error(), "quote", "%s %s", key, n)
			assert.NotContains(t, err.Error(), "write an integer", "%s %s", key, n)
		}
	}
}
