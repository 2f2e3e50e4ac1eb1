package envoyrls_test

import (
	"encoding/base64"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// TestConfigErrorsClipHugeValues: a configuration with a value of 64 KB (a
// blob pasted into a descriptor's value, a key, a unit or a window) where it
// is refused gives an error of a few hundred bytes that quotes the value's
// start and says how long it is, not one that repeats the 64 KB into
// each log line of each reload.
func TestConfigErrorsClipHugeValues(t *testing.T) {
	big := strings.Repeat("x", 1<<16)
	under := func(rateLimit string) string { // a descriptor of value big
		return "domain: d\ndescriptors:\n  - key: k\n    value: " + big + "\n    rate_limit:\n" + rateLimit
	}
	// An error of at most 1000 bytes (a byte that is not UTF-8 is quoted
	// as 4), which quotes the value's start and its length.
	bounded := func(t *testing.T, err error, what string) {
		t.Helper()
		require.Error(t, err, what)
		assert.ErrorIs(t, err, envoyrls.ErrConfig, what)
		assert.Less(t, len(err.Error()), 1000, "%s: %.300s", what, err)
		assert.Regexp(t, `… \([0-9]+ bytes\)`, err.Error(), "%s: %.300s", what, err)
	}
	for what, yml := range map[string]string{
		"unknown key":     "domain: d\ndescriptors:\n  - key: k\n    ? " + big[:1<<15] + "\n    : 1\n", // explicit: a plain key holds at most 1024 bytes
		"unit":            "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: " + big + "\n      requests_per_unit: 5\n",
		"unit and window": "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: " + big + "\n      window: 1s\n      requests_per_unit: 5\n",
		"window":          "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      window: " + big + "\n      requests_per_unit: 5\n",
		"window past a Go duration": "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      window: " +
			strings.Repeat("9", 1<<16) + "h\n      requests_per_unit: 5\n",
		"value, negative burst": under("      unit: second\n      requests_per_unit: 5\n      algorithm: TokenBucket\n      burst: -1\n"),
		"value, unlimited":      under("      unlimited: true\n      window: 1s\n"),
		"value, algorithm":      under("      unit: second\n      requests_per_unit: 5\n      algorithm: " + big + "\n"),
		"value, name not UTF-8": under("      unit: second\n      requests_per_unit: 5\n      name: !!binary " +
			base64.StdEncoding.EncodeToString([]byte(strings.Repeat("\xff", 1<<16))) + "\n"),
		"value given twice":      "domain: d\ndescriptors:\n  - key: k\n    value: " + big + "\n  - key: k\n    value: " + big + "\n",
		"share_threshold":        "domain: d\ndescriptors:\n  - key: k\n    value: " + big + "\n    share_threshold: true\n",
		"anchor":                 "domain: d\ndescriptors: &" + big + "\n  - key: k\n    descriptors: *" + big + "\n",
		"list item":              "domain: d\ndescriptors:\n  - key: k\n    descriptors:\n      - " + big + "\n",
		"float":                  "domain: d\ndescriptors:\n  - key: k\n    value: 1." + strings.Repeat("0", 1<<16) + "\n",
		"float through an alias": "domain: d\ndescriptors:\n  - key: a\n    metadata: &" + big + " {unit: second, requests_per_unit: 1.5}\n  - key: b\n    rate_limit: *" + big + "\n",
		"float merged in":        "domain: d\ndescriptors:\n  - key: a\n    metadata: &" + big + " {unit: second, requests_per_unit: 1.5}\n  - key: b\n    rate_limit:\n      <<: *" + big + "\n",
	} {
		_, err := envoyrls.ParseDomain("f.yaml", []byte(yml))
		bounded(t, err, what)
	}

	// A domain given twice, in two files.
	yml := []byte("domain: " + big + "\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      requests_per_unit: 5\n")
	a, err := envoyrls.ParseDomain("a.yaml", yml)
	require.NoError(t, err)
	b, err := envoyrls.ParseDomain("b.yaml", yml)
	require.NoError(t, err)
	_, err = envoyrls.NewConfig(a, b)
	bounded(t, err, "domain twice")
	a.File, b.File = "", ""
	_, err = envoyrls.NewConfig(a, b)
	bounded(t, err, "domain twice, no files")

	// A rule the server cannot build a limiter for (a sliding log of more
	// than slidinglog.MaxLimit requests), under a descriptor of value big.
	d, err := envoyrls.ParseDomain("f.yaml", []byte(under("      unit: second\n      requests_per_unit: 1000000\n      algorithm: SlidingLog\n")))
	require.NoError(t, err)
	cfg, err := envoyrls.NewConfig(d)
	require.NoError(t, err)
	_, err = envoyrls.New(cfg, envoyrls.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.Error(t, err)
	assert.Less(t, len(err.Error()), 1000, "%.300s", err)
	assert.Contains(t, err.Error(), "… (65540 bytes)", "%.300s", err)
}
