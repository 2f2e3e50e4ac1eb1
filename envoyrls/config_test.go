package envoyrls

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func kv(pairs ...string) []Entry {
	out := make([]Entry, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Entry{pairs[i], pairs[i+1]})
	}
	return out
}

// TestMatchExample resolves descriptors against the reference server's
// example configuration: value beats wildcard beats bare key, level by
// level, and a rule applies only at the descriptor's last entry.
func TestMatchExample(t *testing.T) {
	cfg, err := LoadDir("testdata/example")
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		domain  string
		entries []Entry
		want    string // the matched rule's key; "" for none
	}{
		{"value", "rl", kv("category", "account"), "rl.category_account"},
		{"unknown value, no bare key", "rl", kv("category", "other"), ""},
		{"nested value", "rl", kv("source_cluster", "proxy", "destination_cluster", "mock"), "rl.source_cluster_proxy.destination_cluster_mock"},
		{"parent without rule", "rl", kv("source_cluster", "proxy"), ""},
		{"bare key", "rl", kv("foo", "anything"), "rl.foo"},
		{"bare key, nested bare key", "rl", kv("foo", "x", "bar", "y"), "rl.foo.bar"},
		{"value beats bare key", "rl", kv("foo", "x", "bar", "bkthomps"), "rl.foo.bar_bkthomps"},
		{"deeper than the tree", "rl", kv("foo", "x", "bar", "y", "z", "w"), ""},
		{"leaf then more entries", "rl", kv("unspec", "a", "b", "c"), ""},
		{"wildcard beats bare key", "rl", kv("path", "/api/v1"), "rl.path_/api/*"},
		{"wildcard matches empty rest", "rl", kv("path", "/api/"), "rl.path_/api/*"},
		{"wildcard misses, bare key", "rl", kv("path", "/web"), "rl.path"},
		{"unlimited", "rl", kv("qux", "1"), "rl.qux"},
		{"other domain", "mongo_cps", kv("database", "users"), "mongo_cps.database_users"},
		{"no entries", "rl", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := cfg.Match(tc.domain, tc.entries)
			assert.True(t, ok)
			if tc.want == "" {
				assert.Nil(t, r)
				return
			}
			require.NotNil(t, r)
			assert.Equal(t, tc.want, r.Key)
		})
	}
	r, ok := cfg.Match("nope", kv("foo", "x"))
	assert.False(t, ok, "unknown domain")
	assert.Nil(t, r)
}

// TestRuleFields checks what each rule of the example holds.
func TestRuleFields(t *testing.T) {
	cfg, err := LoadDir("testdata/example")
	require.NoError(t, err)
	byKey := map[string]*Rule{}
	for _, r := range cfg.Rules() {
		byKey[r.Key] = r
	}
	acc := byKey["rl.category_account"]
	require.NotNil(t, acc)
	assert.Equal(t, []string{"bkthomps", "fake_name"}, acc.Replaces)
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4, Window: time.Minute}, acc.Limit)
	assert.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, acc.Unit)

	banned := byKey["rl.foo.bar_banned"]
	require.NotNil(t, banned)
	assert.Equal(t, "banned_limit", banned.Name)
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.FixedWindow, Window: time.Minute}, banned.Limit, "requests_per_unit 0 denies every hit, in windows of its unit")

	assert.True(t, byKey["rl.foo.baz_shady"].ShadowMode)
	assert.True(t, byKey["rl.foo.bay"].Unlimited)
	assert.True(t, byKey["rl.unspec"].DetailedMetric)

	tb := byKey["rolling.api_key"]
	require.NotNil(t, tb)
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 100, Window: time.Minute, Burst: 20}, tb.Limit)
	assert.Equal(t, pb.RateLimitResponse_RateLimit_MINUTE, tb.Unit)
	assert.Equal(t, uint32(1), tb.UnitMultiplier)
	g := byKey["rolling.tenant"]
	assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 3, Window: 90 * time.Second}, g.Limit)
	assert.Equal(t, pb.RateLimitResponse_RateLimit_SECOND, g.Unit)
	assert.Equal(t, uint32(90), g.UnitMultiplier)
	assert.Equal(t, hotlimit.SlidingLog, byKey["rolling.user"].Limit.Algorithm)
}

// TestUnits covers every unit name, in any case.
func TestUnits(t *testing.T) {
	for name, want := range map[string]time.Duration{
		"second": time.Second, "MINUTE": time.Minute, "Hour": time.Hour, "day": 24 * time.Hour,
		"week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour,
	} {
		d, err := ParseDomain("f.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: "+name+"\n      requests_per_unit: 7\n"))
		require.NoError(t, err, name)
		assert.Equal(t, want, d.Rules[0].Limit.Window, name)
		assert.Equal(t, 7, d.Rules[0].Limit.Limit, name)
	}
}

// TestWindowOfTheMostUnits: a window of 2^32-1 seconds, the largest
// multiplier current_limit carries, is that many seconds, not a window no
// unit describes.
func TestWindowOfTheMostUnits(t *testing.T) {
	d, err := ParseDomain("f.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      window: 4294967295s\n      requests_per_unit: 7\n"))
	require.NoError(t, err)
	assert.Equal(t, pb.RateLimitResponse_RateLimit_SECOND, d.Rules[0].Unit)
	assert.Equal(t, uint32(4294967295), d.Rules[0].UnitMultiplier)
}

// TestLoadErrors pins the load errors: the reference's, and the
// extensions'.
func TestLoadErrors(t *testing.T) {
	rule := func(body string) string {
		return "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n" + body
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"malformed", "domain: [", "error loading config file"},
		{"unknown key", "domain: d\nfoo: 1\n", "unknown key 'foo'"},
		{"unknown nested key", rule("      unit: second\n      requests_per_unit: 1\n      per: 2\n"), "unknown key 'per'"},
		{"algorithm at the top", "domain: d\nalgorithm: GCRA\n", "unknown key 'algorithm'"},
		{"window in a descriptor", "domain: d\ndescriptors:\n  - key: k\n    window: 1s\n    rate_limit: {unit: second, requests_per_unit: 1}\n", "unknown key 'window'"},
		{"burst in replaces", rule("      unit: second\n      requests_per_unit: 1\n      replaces:\n        - {name: x, burst: 2}\n"), "unknown key 'burst'"},
		{"window merged into a descriptor", "domain: d\ndescriptors:\n  - key: j\n    metadata: &w {window: 1s}\n  - key: k\n    <<: *w\n", "unknown key 'window'"},
		{"window merged into a descriptor after a rate_limit", "domain: d\ndescriptors:\n  - key: j\n    metadata: &w {window: 1s, requests_per_unit: 1}\n  - key: k\n    rate_limit: *w\n  - key: l\n    <<: *w\n", "unknown key 'window'"},
		{"burst in a descriptor after a rate_limit", "domain: d\ndescriptors:\n  - key: j\n    metadata: &w {algorithm: GCRA, burst: 2, unit: second, requests_per_unit: 1}\n  - key: k\n    rate_limit: *w\n    descriptors: [*w]\n", "unknown key 'algorithm'"},
		{"empty domain", "descriptors: []\n", "config file cannot have empty domain"},
		{"empty key", "domain: d\ndescriptors:\n  - value: v\n", "descriptor has empty key"},
		{"duplicate key", "domain: d\ndescriptors:\n  - key: k\n  - key: k\n", "duplicate descriptor composite key 'd.k'"},
		{"duplicate key value", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - {key: k, value: v}\n      - {key: k, value: v}\n", "duplicate descriptor composite key 'd.a.k_v'"},
		{"unlimited with unit", rule("      unlimited: true\n      unit: second\n"), "should not specify rate limit unit when unlimited"},
		{"unlimited with window", rule("      unlimited: true\n      window: 1s\n"), "should not specify algorithm, burst or window when unlimited"},
		{"bad unit", rule("      unit: fortnight\n      requests_per_unit: 1\n"), "invalid rate limit unit 'fortnight'"},
		{"no unit", rule("      requests_per_unit: 1\n"), "invalid rate limit unit ''"},
		{"unit unknown", rule("      unit: unknown\n      requests_per_unit: 1\n"), "invalid rate limit unit 'unknown'"},
		{"replaces itself", rule("      name: n\n      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: n\n"), "replaces should not contain name of same descriptor"},
		{"empty replaces", rule("      unit: second\n      requests_per_unit: 1\n      replaces:\n        - name: \"\"\n"), "should not have an empty replaces entry"},
		{"bad algorithm", rule("      unit: second\n      requests_per_unit: 1\n      algorithm: leaky\n"), `unknown algorithm "leaky"`},
		{"burst without bucket", rule("      unit: second\n      requests_per_unit: 1\n      burst: 3\n"), "FixedWindow has no burst"},
		{"negative burst", rule("      unit: second\n      requests_per_unit: 1\n      algorithm: GCRA\n      burst: -1\n"), "burst -1 must not be negative"},
		{"bad window", rule("      requests_per_unit: 1\n      window: soon\n"), "window 'soon' is not a positive Go duration"},
		{"negative window", rule("      requests_per_unit: 1\n      window: -1s\n"), "window '-1s' is not a positive Go duration"},
		{"zero window", rule("      requests_per_unit: 0\n      window: 0s\n"), "window '0s' is not a positive Go duration"},
		{"algorithm Unlimited", rule("      unit: second\n      requests_per_unit: 0\n      algorithm: Unlimited\n"), "write unlimited: true instead"},
		{"unit and window", rule("      unit: second\n      window: 2s\n      requests_per_unit: 1\n"), "sets both unit 'second' and window '2s'"},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - key: k\n    share_threshold: true\n", "share_threshold can only be used with wildcard"},
		{"list of scalars", "domain: d\ndescriptors:\n  - k\n", "list of type other than map"},
		{"metadata a list", "domain: d\ndescriptors:\n  - key: k\n    metadata: [1, 2]\n", "cannot unmarshal !!seq into map"},
		{"metadata a scalar", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: k\n        metadata: x\n", "line 6: cannot unmarshal !!str `x` into map"},
		{"list of lists", "domain: d\ndescriptors: [[k, 1]]\n", "list of type other than map: [k 1]"},
		{"list of nulls", "domain: d\ndescriptors: [~]\n", "list of type other than map: <nil>"},
		{"null key", "domain: d\n~: a\n", "key is not of type string: <nil>"},
		{"negative requests", rule("      unit: second\n      requests_per_unit: -1\n"), "error loading config file"},
		// The reference reads the file into plain values first and takes only
		// strings, integers, booleans and nulls as leaves; and its YAML
		// decoder takes a quoted yes or off for a string, not a boolean.
		{"float requests", rule("      unit: second\n      requests_per_unit: 5.0\n"), "error checking config: line 6: requests_per_unit 5.0 is a float: write an integer:"},
		{"exponent requests", rule("      unit: second\n      requests_per_unit: 1e3\n"), "error checking config: line 6: requests_per_unit 1e3 is a float"},
		// A float an anchor holds has the anchor's line: the alias or
		// merge key that brought it where it counts is named too.
		{"float through an alias", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {unit: second, requests_per_unit: 1.5}\n  - key: b\n    rate_limit: *m\n",
			"error checking config: line 4: requests_per_unit 1.5 (reached through *m at line 6, under rate_limit) is a float"},
		{"float merged in", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {unit: second, requests_per_unit: 1.5}\n  - key: b\n    rate_limit:\n      <<: *m\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *m at line 7, under rate_limit) is a float"},
		{"float merged in among others", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {requests_per_unit: 1.5}\n  - key: b\n    rate_limit: {<<: [{unit: minute}, *m]}\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *m at line 6, under rate_limit) is a float"},
		{"float as an alias", "domain: d\ndescriptors:\n  - key: a\n    metadata: {n: &n 1.5}\n  - key: b\n    value: *n\n",
			"error checking config: line 4: value 1.5 (reached through *n at line 6) is a float"},
		{"integer past 64 bits through an alias", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {key: c, value: 99999999999999999999}\n  - key: b\n    descriptors: [*m]\n",
			"error checking config: line 4: value 99999999999999999999 (reached through *m at line 6, under descriptors) is an integer past 64 bits"},
		// Through anchors nested in metadata, the merge named is the one
		// in the mapping where the value counts, not one inside the
		// metadata, where nothing does.
		{"float merged in through a nested anchor", "domain: d\ndescriptors:\n  - key: a\n    metadata: {x: &a {requests_per_unit: 1.5}, y: &b {<<: *a}}\n  - key: b\n    rate_limit: {<<: *b, unit: second}\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *b at line 6, under rate_limit) is a float"},
		{"float merged in through a nested anchor merged twice", "domain: d\ndescriptors:\n  - key: a\n    metadata: {x: &a {requests_per_unit: 1.5}, y: &b {<<: *a}, z: {<<: *b}}\n  - key: b\n    rate_limit: {<<: *b, unit: second}\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *b at line 6, under rate_limit) is a float"},
		{"float merged twice, replaced where first merged", "domain: d\ndescriptors:\n  - key: a\n    metadata: {x: &a {unit: second, requests_per_unit: 1.5}}\n  - key: b\n    rate_limit: {<<: *a, requests_per_unit: 2}\n  - key: c\n    rate_limit: {<<: *a}\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *a at line 8, under rate_limit) is a float"},
		{"float merged in through an inline merge", "domain: d\ndescriptors:\n  - key: a\n    metadata: &a {requests_per_unit: 1.5}\n  - key: b\n    rate_limit: {<<: {<<: *a}, unit: second}\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *a at line 6, under rate_limit) is a float"},
		// A mapping merged in whole names the merge key where it is: in a
		// descriptor of the list under descriptors, not under the key of
		// the mapping it brought.
		{"float in a mapping merged in", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {rate_limit: {unit: second, requests_per_unit: 1.5}}\n  - key: b\n    <<: *m\n",
			"error checking config: line 4: requests_per_unit 1.5 (merged in by <<: *m at line 6, under descriptors) is a float"},
		{"integer past 64 bits merged in, replaced", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {requests_per_unit: 9223372036854775808}\n  - key: k\n    rate_limit:\n      <<: *m\n      requests_per_unit: 2\n      unit: second\n",
			"error checking config: line 4: requests_per_unit 9223372036854775808 (merged in by <<: *m at line 7, under rate_limit) is outside a uint32's range, 0 to 4294967295"},
		{"float at its anchor", "domain: d\ndescriptors:\n  - key: a\n    rate_limit: &r {unit: second, requests_per_unit: 1.5}\n  - key: b\n    rate_limit: *r\n",
			"error checking config: line 4: requests_per_unit 1.5 is a float"},
		{"float value", "domain: d\ndescriptors:\n  - key: k\n    value: 1.50\n", "error checking config: line 4: value 1.50 is a float"},
		{"infinite value", "domain: d\ndescriptors:\n  - key: k\n    value: .inf\n", "error checking config: line 4: value .inf is a float"},
		{"integer past int64", "domain: d\ndescriptors:\n  - key: k\n    value: 9223372036854775808\n", "error checking config: line 4: value 9223372036854775808 is an integer past int64's largest, 9223372036854775807: quote it for a string"},
		{"integer past uint64", "domain: d\ndescriptors:\n  - key: k\n    value: 99999999999999999999\n", "error checking config: line 4: value 99999999999999999999 is an integer past 64 bits: quote it for a string"},
		{"integer below int64", "domain: d\ndescriptors:\n  - key: k\n    value: -9_223_372_036_854_775_809\n", "error checking config: line 4: value -9_223_372_036_854_775_809 is an integer below int64's least, -9223372036854775808: quote it for a string"},
		{"quoted yes", "domain: d\ndescriptors:\n  - key: k\n    shadow_mode: \"yes\"\n", "cannot unmarshal !!str `yes` into bool"},
		{"quoted off", "domain: d\ndescriptors:\n  - key: k\n    quota_mode: 'off'\n", "cannot unmarshal !!str `off` into bool"},
		{"tagged on", rule("      unlimited: !!str on\n"), "cannot unmarshal !!str `on` into bool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDomain("bad.yaml", []byte(tc.yaml))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
			assert.True(t, strings.HasPrefix(err.Error(), "bad.yaml: "), "names the file: %v", err)
		})
	}
}

// TestReferenceKeysAccepted: keys the reference reads and hotlimitd does
// not act on (metadata, value_to_metric, share_threshold on a wildcard)
// load as they do there.
func TestReferenceKeysAccepted(t *testing.T) {
	_, err := ParseDomain("ok.yaml", []byte(`
domain: d
descriptors:
  - key: service
    value: s*
    value_to_metric: true
    share_threshold: true
    quota_mode: true
    metadata:
      anything: {goes: [1, 2.5]}
    rate_limit:
      unit: minute
      requests_per_unit: 1
`))
	require.NoError(t, err)
}

// TestReferenceScalarsAccepted: the leaves the reference's YAML decoder
// reads (YAML 1.1 booleans unquoted, integers in any base, with
// underscores, timestamps as strings) load with its values.
func TestReferenceScalarsAccepted(t *testing.T) {
	d, err := ParseDomain("ok.yaml", []byte(`
domain: d
descriptors:
  - key: a
    value: 2001-12-14
    shadow_mode: yes
    rate_limit: {unit: second, requests_per_unit: 0x10}
  - key: b
    quota_mode: On
    rate_limit: {unit: second, requests_per_unit: 1_000}
  - key: c
    value: ~
    shadow_mode: off
    rate_limit: {unit: second, requests_per_unit: +5}
`))
	require.NoError(t, err)
	a, _ := d.match(kv("a", "2001-12-14"))
	require.NotNil(t, a)
	assert.True(t, a.ShadowMode)
	assert.Equal(t, uint32(16), a.RequestsPerUnit)
	b, _ := d.match(kv("b", "x"))
	require.NotNil(t, b)
	assert.True(t, b.QuotaMode)
	assert.Equal(t, uint32(1000), b.RequestsPerUnit)
	c, _ := d.match(kv("c", "x"))
	require.NotNil(t, c)
	assert.False(t, c.ShadowMode)
	assert.Equal(t, uint32(5), c.RequestsPerUnit)
}

// TestDuplicateDomain: two files of one domain are rejected, naming both.
func TestDuplicateDomain(t *testing.T) {
	dir := t.TempDir()
	body := []byte("domain: same\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), body, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yml"), body, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a config"), 0o644))
	_, err := LoadDir(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "duplicate domain 'same' in config file")
	assert.Contains(t, err.Error(), "a.yaml")
	assert.Contains(t, err.Error(), "b.yml")
}

// TestNewConfigNilDomainIsAnError: a nil *Domain, such as ParseDomain
// returns with its error, is refused by NewConfig with an error naming its
// place, where it panicked; and the nil *Config it returns then answers as
// one without domains, where each of its methods panicked.
func TestNewConfigNilDomainIsAnError(t *testing.T) {
	d, err := ParseDomain("ok.yaml", []byte("domain: ok\n"))
	require.NoError(t, err)
	var cfg *Config
	require.NotPanics(t, func() { cfg, err = NewConfig(d, nil) })
	assert.Nil(t, cfg)
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "domains[1] is nil")

	require.NotPanics(t, func() {
		assert.Empty(t, cfg.Domains())
		assert.Empty(t, cfg.Rules())
		assert.Empty(t, cfg.Warnings())
		r, known := cfg.Match("ok", kv("k", "v"))
		assert.Nil(t, r)
		assert.False(t, known)
	}, "a nil *Config is one without domains")
}

// TestNewConfigNilRuleIsAnError: a Domain built by hand with a nil rule
// among its Rules is refused by NewConfig with an error naming the rule's
// place, where New panicked on it.
func TestNewConfigNilRuleIsAnError(t *testing.T) {
	d, err := ParseDomain("ok.yaml", []byte("domain: ok\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	d.Rules = append(d.Rules, nil)
	var cfg *Config
	require.NotPanics(t, func() { cfg, err = NewConfig(d) })
	assert.Nil(t, cfg)
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "domains[0] (ok): rules[1] is nil")
}

func TestWildcardMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, s string
		want       bool
	}{
		{"k_a*", "k_abc", true},
		{"k_a*", "k_a", true},
		{"k_a*", "k_b", false},
		{"k_a*c", "k_abc", true},
		{"k_a*c", "k_ac", true},
		{"k_a*c", "k_ab", false},
		{"k_*b*d", "k_abcd", true},
		{"k_*b*d", "k_acd", false},
		{"k_a*a", "k_a", false},      // the prefix and suffix may not overlap
		{"k_*b*b*d", "k_abd", false}, // nor may two parts
		{"k_*b*b*d", "k_abbd", true},
	} {
		assert.Equal(t, tc.want, wildcardMatch(strings.Split(tc.pattern, "*"), tc.s), "%s ~ %s", tc.pattern, tc.s)
	}
}

// TestDescriptorKeyCollisionFree: descriptors that differ anywhere get
// different counter keys, whatever bytes they hold.
func TestDescriptorKeyCollisionFree(t *testing.T) {
	e := func(pairs ...string) []*rlext.RateLimitDescriptor_Entry { return desc(pairs...).Entries }
	cases := []struct {
		domain  string
		entries []*rlext.RateLimitDescriptor_Entry
	}{
		{"d", e("a", "b")},
		{"d", e("a_b", "")},
		{"d", e("a", "", "b", "")},
		{"d", e("a", "b", "", "")},
		{"d", e("ab", "")},
		{"d.a", e("b", "")},
		{"d", e("a\x01", "b")},
		{"d", e("a", "\x01b")},
		{"", e("d", "a", "b", "")},
		{"d", nil},
		{"d", e("", "")},
	}
	seen := map[string]int{}
	// A shared wildcard "b" never shares a key with the value "b".
	seen[descriptorKey("d", e("a", "x"), []string{"b"})] = -1
	for i, c := range cases {
		k := descriptorKey(c.domain, c.entries, nil)
		if j, dup := seen[k]; dup {
			t.Errorf("cases %d and %d share key %q", j, i, k)
		}
		seen[k] = i
	}
	assert.Len(t, seen, len(cases)+1)
}

// TestAnchorsAndMergeKeys: a file that shares settings through YAML anchors,
// aliases and merge keys (`<<: *anchor`) loads as the reference loads it,
// and a key its aliases bring in is checked like any other.
func TestAnchorsAndMergeKeys(t *testing.T) {
	d, err := ParseDomain("anchors.yaml", []byte(`
domain: d
descriptors:
  - key: a
    rate_limit: &std
      unit: minute
      requests_per_unit: 7
  - key: b
    rate_limit:
      <<: *std
      requests_per_unit: 8
  - key: c
    rate_limit: *std
  - key: e
    rate_limit:
      <<: [*std, {name: e}]
  - &leaf
    key: f
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: g
    descriptors: [*leaf]
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	for _, tc := range []struct {
		entries []Entry
		limit   uint32
		unit    pb.RateLimitResponse_RateLimit_Unit
		name    string
	}{
		{kv("a", "x"), 7, pb.RateLimitResponse_RateLimit_MINUTE, ""},
		{kv("b", "x"), 8, pb.RateLimitResponse_RateLimit_MINUTE, ""}, // the explicit key beats the merged one
		{kv("c", "x"), 7, pb.RateLimitResponse_RateLimit_MINUTE, ""},
		{kv("e", "x"), 7, pb.RateLimitResponse_RateLimit_MINUTE, "e"},
		{kv("f", "x"), 3, pb.RateLimitResponse_RateLimit_SECOND, ""},
		{kv("g", "x", "f", "y"), 3, pb.RateLimitResponse_RateLimit_SECOND, ""},
	} {
		r, _ := cfg.Match("d", tc.entries)
		require.NotNil(t, r, "%v", tc.entries)
		assert.Equal(t, tc.limit, r.RequestsPerUnit, "%v", tc.entries)
		assert.Equal(t, tc.unit, r.Unit, "%v", tc.entries)
		assert.Equal(t, tc.name, r.Name, "%v", tc.entries)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown key merged in", "domain: d\nx: &bad {unit: second, per: 1}\n", "unknown key 'x'"},
		{"unknown key through a merge", "domain: d\ndescriptors:\n  - key: k\n    metadata: &m {unit: second, per: 1}\n    rate_limit:\n      <<: *m\n      requests_per_unit: 1\n", "unknown key 'per'"},
		{"unknown key through an alias", "domain: d\ndescriptors:\n  - key: k\n    metadata: &m {unit: second, per: 1}\n    rate_limit: *m\n", "unknown key 'per'"},
		{"merge of a scalar", "domain: d\ndescriptors:\n  - key: k\n    <<: 3\n", "line 4: map merge requires map or sequence of maps"},
		// The decoder merges a mapping, an alias of one, or a list of
		// those, wherever the merge is, metadata and replaced values
		// included: an alias of a list, a null, or a list holding an alias
		// of a scalar, is refused.
		{"merge of an alias of a list", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l [{key: x}]\n    <<: *l\n", "line 5: map merge requires map or sequence of maps as the value"},
		{"merge of an alias of an empty list", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l []\n    <<: *l\n", "line 5: map merge requires map or sequence of maps"},
		{"merge of a list holding an alias of a scalar", "domain: d\ndescriptors:\n  - key: k\n    value: &s v\n    <<: [*s]\n", "line 5: map merge requires map or sequence of maps"},
		{"merge of a null", "domain: d\ndescriptors:\n  - key: k\n    <<: ~\n", "line 4: map merge requires map or sequence of maps"},
		{"bad merge in metadata", "domain: d\ndescriptors:\n  - key: k\n    metadata: {a: &l [], b: {<<: *l}}\n", "line 4: map merge requires map or sequence of maps"},
		{"bad merge in a replaced value", "domain: d\ndescriptors:\n  - key: k\n    descriptors: &l []\n    rate_limit: {<<: *l}\n    rate_limit: {unit: second, requests_per_unit: 1}\n", "line 5: map merge requires map or sequence of maps"},
		{"alias of itself", "domain: d\ndescriptors:\n  - &x\n    key: k\n    descriptors: [*x]\n", "error loading config file"},
		{"merge of itself", "domain: d\ndescriptors:\n  - &x\n    key: k\n    <<: *x\n    foo: 1\n", "line 5: anchor 'x' value contains itself"},
		{"rate_limit merging itself", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: &r\n      <<: *r\n      unit: second\n", "line 5: anchor 'r' value contains itself"},
		{"merge of a list holding itself", "domain: d\ndescriptors:\n  - &x {key: k, <<: [{value: v}, *x]}\n", "line 3: anchor 'x' value contains itself"},
		{"metadata holding itself", "domain: d\ndescriptors:\n  - key: k\n    metadata: &m {a: [*m]}\n", "line 4: anchor 'm' value contains itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDomain("bad.yaml", []byte(tc.yaml))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestReferenceDecodeOrder: keys and merge keys count in file order, the
// later winning, and a rate_limit given again (or merged in) adds its keys
// to the one before, as the reference's YAML decoder fills its structs.
func TestReferenceDecodeOrder(t *testing.T) {
	d, err := ParseDomain("order.yaml", []byte(`
domain: d
descriptors:
  - key: base
    rate_limit: &base {unit: day, requests_per_unit: 7, name: base}
  - key: mergedafter
    rate_limit: {requests_per_unit: 9, <<: *base}
  - key: mergedbefore
    rate_limit: {<<: *base, requests_per_unit: 8}
  - key: twice
    rate_limit: {unit: second, requests_per_unit: 1}
    rate_limit: {name: second}
  - key: mergedrule
    rate_limit: {unit: minute, requests_per_unit: 2}
    <<: {rate_limit: {name: merged}}
  - key: list
    <<: [{rate_limit: {name: first}}, {rate_limit: {name: last, unit: hour, requests_per_unit: 3}}]
  - key: nulled
    rate_limit: {unit: second, requests_per_unit: 1}
    rate_limit: ~
`))
	require.NoError(t, err)
	for _, tc := range []struct {
		key   string
		limit uint32
		unit  pb.RateLimitResponse_RateLimit_Unit
		name  string
	}{
		{"mergedafter", 7, pb.RateLimitResponse_RateLimit_DAY, "base"},
		{"mergedbefore", 8, pb.RateLimitResponse_RateLimit_DAY, "base"},
		{"twice", 1, pb.RateLimitResponse_RateLimit_SECOND, "second"},
		{"mergedrule", 2, pb.RateLimitResponse_RateLimit_MINUTE, "merged"},
		{"list", 3, pb.RateLimitResponse_RateLimit_HOUR, "first"},
	} {
		r, _ := d.match(kv(tc.key, "x"))
		require.NotNil(t, r, tc.key)
		assert.Equal(t, tc.limit, r.RequestsPerUnit, tc.key)
		assert.Equal(t, tc.unit, r.Unit, tc.key)
		assert.Equal(t, tc.name, r.Name, tc.key)
	}
	r, _ := d.match(kv("nulled", "x"))
	assert.Nil(t, r, "a null rate_limit given last leaves no rule")
	assert.Equal(t, []string{
		"order.yaml: line 11: key 'rate_limit' is given again at line 12, whose keys count over these",
		"order.yaml: line 19: key 'rate_limit' is given again at line 20, which counts",
	}, d.Warnings)
}

// TestExtensionKeysUnderRateLimit: hotlimit's keys load under rate_limit,
// written there or merged in.
func TestExtensionKeysUnderRateLimit(t *testing.T) {
	d, err := ParseDomain("ext.yaml", []byte(`
domain: d
descriptors:
  - key: a
    rate_limit: &gcra {algorithm: GCRA, burst: 2, window: 10s, requests_per_unit: 5}
  - key: b
    rate_limit:
      <<: *gcra
      requests_per_unit: 6
`))
	require.NoError(t, err)
	for key, limit := range map[string]int{"a": 5, "b": 6} {
		r, _ := d.match(kv(key, "x"))
		require.NotNil(t, r, key)
		assert.Equal(t, hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: limit, Window: 10 * time.Second, Burst: 2}, r.Limit, key)
	}
}

// TestLimitBeyondMemoryRange: a reference config whose limit is beyond what
// the in-memory fixed window counts (here 100M a month) loads, is rejected
// by an in-memory server with the file, the rule and the range named, and is
// put in force by a server on Redis, whose counters are wider (unless it
// falls back to memory on a failure: then the in-memory range applies).
func TestLimitBeyondMemoryRange(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(file, []byte("domain: big\ndescriptors:\n  - key: tenant\n    rate_limit: {unit: month, requests_per_unit: 100000000}\n"), 0o644))
	cfg, err := LoadDir(dir)
	require.NoError(t, err, "the file is valid: only a backend can say whether it holds the limit")
	r, _ := cfg.Match("big", kv("tenant", "t"))
	require.NotNil(t, r)
	assert.Equal(t, 100_000_000, r.Limit.Limit)

	quiet := WithLogger(slog.New(slog.DiscardHandler))
	_, err = New(cfg, quiet)
	require.Error(t, err, "in memory")
	assert.ErrorIs(t, err, hotlimit.ErrInvalidConfig)
	for _, want := range []string{file, "big.tenant", "out of range"} {
		assert.Contains(t, err.Error(), want)
	}

	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: building a limiter does not talk to Redis
	t.Cleanup(func() { _ = client.Close() })
	// As hotlimitd builds it by default: a failure is an error, with no
	// in-memory fallback (whose range would apply again).
	factory := redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailClosed))
	s, err := New(cfg, quiet, WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err, "on Redis")
	assert.Same(t, cfg, s.Config())
}

// TestRepeatedKeyLastWins: a key given twice in one mapping loads with the
// last value, as the reference reads it, with a warning naming the file and
// both lines.
func TestRepeatedKeyLastWins(t *testing.T) {
	d, err := ParseDomain("dup.yaml", []byte(`domain: d
descriptors:
  - key: a
    rate_limit:
      unit: minute
      requests_per_unit: 7
      requests_per_unit: 5
    metadata: {owner: x, owner: y}
  - key: b
    rate_limit: {unit: second, requests_per_unit: 1}
`))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	r, _ := cfg.Match("d", kv("a", "x"))
	require.NotNil(t, r)
	assert.Equal(t, uint32(5), r.RequestsPerUnit, "the last requests_per_unit counts")
	r, _ = cfg.Match("d", kv("b", "x"))
	assert.NotNil(t, r, "the rest of the file is read")
	assert.Equal(t, []string{
		"dup.yaml: line 6: key 'requests_per_unit' is given again at line 7, which counts",
		"dup.yaml: line 8: key 'owner' is given again at line 8, which counts",
	}, cfg.Warnings())

	d, err = ParseDomain("dup.yaml", []byte("domain: d\ndescriptors:\n  - key: a\ndescriptors:\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	require.Len(t, d.Rules, 1)
	assert.Equal(t, "d.b", d.Rules[0].Key, "the last descriptors list counts")
	assert.Len(t, d.Warnings, 1)

	d, err = ParseDomain("ok.yaml", []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1}\n  - key: b\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	assert.Empty(t, d.Warnings, "a key in two mappings is no repeat")
}

// TestLoadDirWarnsOfNoFile: a directory without a YAML file, empty or
// holding only files of other names, loads as no domain, as in the
// reference, so every request is answered OK; that is said in a warning,
// at start (LoadDir's) and on a reload that empties the directory (in the
// log), as a volume mounted empty would otherwise limit nothing in
// silence. A directory with a domain has no such warning.
func TestLoadDirWarnsOfNoFile(t *testing.T) {
	dir := t.TempDir()
	none := dir + ": no *.yaml or *.yml file, so no domain: every request is answered OK, without a limit"
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, cfg.Domains())
	assert.Equal(t, []string{none}, cfg.Warnings(), "an empty directory")

	misnamed := filepath.Join(dir, "rl.json")
	require.NoError(t, os.WriteFile(misnamed, []byte("domain: rl\n"), 0o644))
	cfg, err = LoadDir(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{misnamed + ": not read: only *.yaml and *.yml files are", none}, cfg.Warnings(), "files of other names only")
	require.NoError(t, os.Remove(misnamed))

	yamlFile := filepath.Join(dir, "rl.yaml")
	require.NoError(t, os.WriteFile(yamlFile, []byte("domain: rl\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644))
	cfg, err = LoadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, cfg.Warnings(), "a domain")

	logs := &lockedBuffer{}
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, os.Remove(yamlFile))
	require.NoError(t, s.ReloadDir(dir))
	assert.Contains(t, logs.String(), `"msg":"config warning"`)
	assert.Contains(t, logs.String(), none, "a reload that empties the directory")
}

// TestLoadDirNamesWhatItSkips: a file without a YAML extension (which the
// reference would read) and a subdirectory are not read, and each is named
// in a warning; hidden entries are skipped quietly.
func TestLoadDirNamesWhatItSkips(t *testing.T) {
	dir := t.TempDir()
	domain := func(name string) []byte {
		return []byte("domain: " + name + "\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), domain("a"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ratelimit"), domain("b"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".hidden.yaml"), []byte("not: read"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "config"), 0o755))
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	require.Len(t, cfg.Domains(), 1)
	assert.Equal(t, "a", cfg.Domains()[0].Name)
	assert.Equal(t, []string{
		filepath.Join(dir, "config") + ": a directory, not read: the configuration is the *.yaml and *.yml files of " + dir + " itself",
		filepath.Join(dir, "ratelimit") + ": not read: only *.yaml and *.yml files are",
	}, cfg.Warnings())
}

// TestDirWatchNamesAFileItSkipsWhenItAppears: a file put into a watched
// directory under a name that is not read (a domain written as
// payments.json) changes nothing to load, yet the next poll names it in a
// warning, once, as a load would; the files read did not change, so nothing
// is reloaded. Taken away and put back, it is named again.
func TestDirWatchNamesAFileItSkipsWhenItAppears(t *testing.T) {
	dir := t.TempDir()
	domain := func(name string) []byte {
		return []byte("domain: " + name + "\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), domain("a"), 0o644))
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.NoError(t, err)
	var loads []error
	w := s.newDirWatch(dir, func(err error) { loads = append(loads, err) })
	w.poll()
	require.Empty(t, logs.String(), "nothing new")

	skipped := filepath.Join(dir, "payments.json")
	require.NoError(t, os.WriteFile(skipped, domain("payments"), 0o644))
	w.poll()
	assert.Contains(t, logs.String(), `"msg":"config warning"`)
	assert.Contains(t, logs.String(), skipped+": not read: only *.yaml and *.yml files are")
	assert.Empty(t, loads, "the files read did not change: nothing is reloaded")
	logged := logs.String()
	w.poll()
	assert.Equal(t, logged, logs.String(), "named once")

	require.NoError(t, os.Remove(skipped))
	w.poll()
	require.NoError(t, os.WriteFile(skipped, domain("payments"), 0o644))
	w.poll()
	assert.Equal(t, 2, strings.Count(logs.String(), skipped+": not read"), "named again when it comes back")
	assert.Empty(t, loads)
}

// TestDirWatchNamesAFileItSkipsBesideABadEdit: a file put under a name not
// read in the same poll as an edit that does not load is named then, though
// no load names it: the rejected load logs its error only, and the next
// polls, finding the files as tried, reload nothing.
func TestDirWatchNamesAFileItSkipsBesideABadEdit(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644))
	cfg, err := LoadDir(dir)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(logs, nil))))
	require.NoError(t, err)
	var loads []error
	w := s.newDirWatch(dir, func(err error) { loads = append(loads, err) })

	skipped := filepath.Join(dir, "payments.json")
	require.NoError(t, os.WriteFile(skipped, []byte("{}"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("domain: [\n"), 0o644))
	w.poll()
	require.Len(t, loads, 1)
	require.Error(t, loads[0], "the edit does not load")
	w.poll()
	assert.Len(t, loads, 1, "the files as tried: nothing reloaded")
	assert.Equal(t, 1, strings.Count(logs.String(), skipped+": not read"), "named once:\n%s", logs.String())
}

// TestDirWatchSkippedLinear: a poll that finds a new entry among many not
// read names it in time linear in the entries: one poll of 8,000 takes about
// as long as 16 polls of 500, where matching each entry against the last
// poll's list would take 16 times as long (a -config directory of thousands
// of other files then spent seconds of CPU at every poll).
func TestDirWatchSkippedLinear(t *testing.T) {
	cfg, err := NewConfig()
	require.NoError(t, err)
	s, err := New(cfg, WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	require.NoError(t, err)
	entries := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("/etc/hotlimitd/file-%06d.json: not read: only *.yaml and *.yml files are", i)
		}
		return out
	}
	poll := func(now []string, times int) time.Duration {
		start := time.Now()
		for range times {
			w := &dirWatch{s: s, dir: "/etc/hotlimitd", skipped: now[1:]} // the first is new
			w.warnSkipped(now)
		}
		return time.Since(start)
	}
	few, many := entries(500), entries(8000)
	assertLinear(t, "polls of 500 entries against one of 8000",
		func() time.Duration { return poll(few, 16) }, func() time.Duration { return poll(many, 1) })
}

// TestMetadataLinear: a metadata of many keys, which nothing reads, loads
// in time linear in its keys: one load of 32,000 keys takes about as long
// as 16 loads of 2,000, where a quadratic load would take 16 times as long.
func TestMetadataLinear(t *testing.T) {
	file := func(keys int) []byte {
		var b strings.Builder
		b.WriteString("domain: d\ndescriptors:\n  - key: k\n    metadata:\n")
		for i := range keys {
			fmt.Fprintf(&b, "      k%d: v\n", i)
		}
		return []byte(b.String())
	}
	load := func(data []byte, times int) time.Duration {
		start := time.Now()
		for range times {
			_, err := ParseDomain("meta.yaml", data)
			require.NoError(t, err)
		}
		return time.Since(start)
	}
	smallFile, largeFile := file(2000), file(32000)
	assertLinear(t, "loads of 2000 keys against one of 32000",
		func() time.Duration { return load(smallFile, 16) }, func() time.Duration { return load(largeFile, 1) })
}

// assertLinear fails t unless large, one run on an input 16 times as large
// as small's, takes less than 4 times as long as small, 16 runs on the
// smaller input: a cost linear in the input takes about as long, a quadratic
// one 16 times as long. The two are timed alternately, each after a
// collection, and the fastest of each counts, over at least five rounds and
// at least a quarter of a second timed: a machine loaded for a while slows
// both alike, not the large one alone, and a run of a millisecond, which
// one time slice of another process or one collection can double, is timed
// often enough that some runs of each go undisturbed. More rounds only
// bring each fastest closer to its undisturbed time, so a quadratic cost
// still shows its 16 times.
func assertLinear(t *testing.T, what string, small, large func() time.Duration) {
	t.Helper()
	fastSmall, fastLarge := time.Duration(math.MaxInt64), time.Duration(math.MaxInt64)
	var timed time.Duration
	rounds := 0
	for ; rounds < 5 || timed < time.Second/4; rounds++ {
		runtime.GC()
		s := small()
		runtime.GC()
		l := large()
		fastSmall, fastLarge = min(fastSmall, s), min(fastLarge, l)
		timed += s + l
	}
	t.Logf("16 %s: %v against %v, the fastest of %d rounds", what, fastSmall, fastLarge, rounds)
	assert.Less(t, fastLarge, 4*fastSmall, "16 %s: the one takes %.1f times as long", what, float64(fastLarge)/float64(fastSmall))
}

// TestMetadataMergeBounded: under metadata, which is kept unread, mappings
// that merge lists of mappings whose keys are lists (never equal, so never
// one replacing another) load, or are rejected, in memory linear in the file: levels that
// would each hold four times the keys of the level before, as many as a
// billion laughs once laid out (64 MiB of pointers at 11 levels), allocate
// less than 4 MiB more than 3 levels do (the least of three loads each, so
// that another goroutine's allocations meanwhile do not count).
func TestMetadataMergeBounded(t *testing.T) {
	file := func(levels int) []byte {
		var b strings.Builder
		b.WriteString("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata:\n      a0: &a0 {? [x] : 1, ? [y] : 2}\n")
		for i := 1; i < levels; i++ {
			fmt.Fprintf(&b, "      a%d: &a%d {<<: [*a%d, *a%d, *a%d, *a%d]}\n", i, i, i-1, i-1, i-1, i-1)
		}
		return []byte(b.String())
	}
	least := func(data []byte) uint64 {
		best := uint64(math.MaxUint64)
		for range 3 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := ParseDomain("meta.yaml", data)
			runtime.ReadMemStats(&after)
			if err != nil {
				require.ErrorIs(t, err, ErrConfig)
			}
			best = min(best, after.TotalAlloc-before.TotalAlloc)
		}
		return best
	}
	few, many := least(file(3)), least(file(11)) // 4^11 keys: 64 MiB of pointers laid out
	t.Logf("3 levels: %d B, 11 levels: %d B", few, many)
	assert.Less(t, many, few+4<<20, "8 more levels allocate %d B more", many-few)
}

// TestValuesCheckedAsTheReference: a value is checked where the reference
// checks it. A float only where it counts (the reference checks the plain
// maps of the file, merge keys applied and later keys winning, and its
// decoder fills an integer with a float); one that a later key or merge key
// replaces loads. What its decoder cannot put in its structs, which take
// every value, fails wherever it is; and so does a list or a mapping as a
// key, even under metadata, which its decoder cannot hold in a map.
func TestValuesCheckedAsTheReference(t *testing.T) {
	rule := func(body string) string { return "domain: d\ndescriptors:\n  - key: k\n" + body }
	for _, tc := range []struct{ name, yaml, want string }{
		{"merged float replaced", "domain: d\ndescriptors:\n  - key: a\n    metadata: &m {requests_per_unit: 1.5}\n  - key: k\n    rate_limit:\n      <<: *m\n      requests_per_unit: 2\n      unit: second\n", ""},
		{"float replaced by a merge", rule("    rate_limit:\n      requests_per_unit: 1.5\n      <<: {requests_per_unit: 2}\n      unit: second\n"), ""},
		{"merged float counts", rule("    rate_limit:\n      unit: second\n      <<: {requests_per_unit: 1.5}\n"), "error checking config: line 6: requests_per_unit 1.5 is a float"},
		{"merged float into a boolean, replaced", rule("    rate_limit:\n      <<: {unlimited: 1.5}\n      unlimited: true\n"), "cannot unmarshal !!float `1.5` into bool"},
		{"merged quoted yes replaced", rule("    rate_limit:\n      <<: {unlimited: 'yes'}\n      unlimited: true\n"), "cannot unmarshal !!str `yes` into bool"},
		{"merged huge integer replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 99999999999999999999}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!float `9999999...` into uint32"},
		// A value past 64 bits in hexadecimal, which both decoders read as
		// a string, or past 32 bits, fails as a requests_per_unit where a
		// merge key or a later key replaces it too; a float that truncates
		// to 0 is taken there.
		{"merged hex past 64 bits replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 0x1ffffffffffffffff}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!str `0x1ffff...` into uint32"},
		{"hex past 64 bits given again", rule("    rate_limit:\n      unit: second\n      requests_per_unit: 0x1ffffffffffffffff\n      requests_per_unit: 2\n"), "line 6: cannot unmarshal !!str `0x1ffff...` into uint32"},
		{"merged hex past 32 bits replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 0x100000000}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!int `0x10000...` into uint32"},
		{"merged decimal past 32 bits replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 4294967296}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!int `4294967296` into uint32"},
		{"merged largest uint32 replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 4294967295}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		// a float truncates toward zero, then must fit in 32 bits
		{"merged float below 2^32 replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 4294967295.5}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		{"merged float of 2^32 replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 4294967296.0}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!float `4294967...` into uint32"},
		{"merged boolean replaced", rule("    rate_limit:\n      <<: {requests_per_unit: yes}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!bool `yes` into uint32"},
		{"merged null replaced", rule("    rate_limit:\n      <<: {requests_per_unit: ~, unlimited: null}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		// YAML 1.1 booleans, y and Y among them, fill a boolean there
		{"merged y replaced", rule("    rate_limit:\n      <<: {unlimited: y, shadow_mode: Y}\n      unlimited: false\n      shadow_mode: false\n      requests_per_unit: 2\n      unit: second\n"), ""},
		// a block scalar is a string, whatever it reads like; an
		// unquoted date is a timestamp there
		{"merged block scalar replaced", rule("    rate_limit:\n      <<:\n        requests_per_unit: |-\n          5\n      requests_per_unit: 2\n      unit: second\n"), "cannot unmarshal !!str `5` into uint32"},
		{"merged date replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 2001-12-14}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!timestamp `2001-12-14` into uint32"},
		// of two values that fail there, the first is named
		{"two values replaced", rule("    rate_limit:\n      <<: {requests_per_unit: abc}\n      requests_per_unit: 2\n      unit: second\n    descriptors: 5\n    descriptors: [{key: e}]\n"), "line 5: cannot unmarshal !!str `abc` into uint32"},
		// an integer tagged !!float is a float of its value there, and
		// underscores anywhere in a number are dropped (YAML 1.1)
		{"merged integer tagged a float replaced", rule("    rate_limit:\n      <<: {requests_per_unit: !!float 5}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		{"merged integer past int64 tagged a float replaced", rule("    rate_limit:\n      <<: {requests_per_unit: !!float 9223372036854775808}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal"},
		{"merged integer of odd underscores replaced", rule("    rate_limit:\n      <<: {requests_per_unit: 1__0_}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		// an integer past int64, within 64 bits, is an unsigned one there
		{"descriptors an integer past int64, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: 9223372036854775808\n    descriptors: [{key: e}]\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 2}\n", "line 4: cannot unmarshal !!int `9223372...` into []config.YamlDescriptor"},
		{"merged quoted integer replaced", rule("    rate_limit:\n      <<: {requests_per_unit: '5'}\n      requests_per_unit: 2\n      unit: second\n"), "line 5: cannot unmarshal !!str `5` into uint32"},
		{"merged word into a boolean, replaced", rule("    rate_limit:\n      <<: {unlimited: abc}\n      unlimited: true\n"), "line 5: cannot unmarshal !!str `abc` into bool"},
		{"merged negative fraction replaced", rule("    rate_limit:\n      <<: {requests_per_unit: -0.5}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		{"merged signed hex replaced", rule("    rate_limit:\n      <<: {requests_per_unit: +0x10}\n      requests_per_unit: 2\n      unit: second\n"), ""},
		// A value that counts is checked as a float or an integer past 64
		// bits first, as there, whatever its decoder would say of it.
		{"decimal past 64 bits", rule("    rate_limit: {unit: second, requests_per_unit: 18446744073709551616}\n"), "error checking config: line 4: requests_per_unit 18446744073709551616 is outside a uint32's range, 0 to 4294967295"},
		{"float past 32 bits", rule("    rate_limit: {unit: second, requests_per_unit: 1e10}\n"), "error checking config: line 4: requests_per_unit 1e10 is a float"},
		// The reference's decoder skips a key its structs have no field
		// for, and its check of keys sees only the values that count: an
		// unknown key in a value a later key replaces loads, and a bad
		// value beside it still fails. A value of a kind its struct cannot
		// hold fails where it is replaced, in its words.
		{"unknown key in a replaced list", rule("    rate_limit: {unit: second, requests_per_unit: 2}\n    descriptors: [{key: c, foo: 1}]\n    descriptors: [{key: e}]\n"), ""},
		{"unknown key in a replaced rate_limit", rule("    rate_limit: {unit: second, requests_per_unit: 1, foo: 2}\n    rate_limit: {unit: second, requests_per_unit: 2}\n"), ""},
		{"key not a string in a replaced list", rule("    rate_limit: {unit: second, requests_per_unit: 2}\n    descriptors: [{key: c, 5: x}]\n    descriptors: [{key: e}]\n"), ""},
		{"unknown key beside a bad value, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [{key: c, foo: 1, rate_limit: {unit: second, requests_per_unit: abc}}]\n    descriptors: [{key: e}]\n", "line 4: cannot unmarshal !!str `abc` into uint32"},
		{"descriptors a scalar, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: 5\n    descriptors: [{key: e}]\n", "line 4: cannot unmarshal !!int `5` into []config.YamlDescriptor"},
		{"an item of descriptors a scalar, replaced", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [3]\n    descriptors: [{key: e}]\n", "line 4: cannot unmarshal !!int `3` into config.YamlDescriptor"},
		{"rate_limit a list, replaced", rule("    rate_limit: [a]\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), "line 4: cannot unmarshal !!seq into config.YamlRateLimit"},
		{"replaces a mapping, replaced", rule("    rate_limit: {unit: second, requests_per_unit: 1, replaces: {name: a}, replaces: [{name: a}]}\n"), "line 4: cannot unmarshal !!map into []config.yamlReplaces"},
		{"metadata a scalar, replaced", rule("    metadata: 5\n    metadata: {}\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), "line 4: cannot unmarshal !!int `5` into map[string]interface {}"},
		{"merged unit a mapping, replaced", rule("    rate_limit:\n      <<: {unit: {a: b}}\n      unit: second\n      requests_per_unit: 1\n"), "line 5: cannot unmarshal !!map into string"},
		// A null item of a list of structs is a zero struct to the
		// decoder: it fails only where it counts, as no mapping.
		{"a null item of descriptors, replaced", rule("    rate_limit: {unit: second, requests_per_unit: 2}\n    descriptors: [~]\n    descriptors: [{key: e}]\n"), ""},
		{"an alias of a null in replaces, replaced", rule("    rate_limit: {unit: second, requests_per_unit: 2}\n    descriptors: [{key: c, rate_limit: {unit: second, requests_per_unit: 1, replaces: &n ~}}, {key: d, rate_limit: {unit: second, requests_per_unit: 1, replaces: [*n]}}]\n    descriptors: []\n"), ""},
		{"a null item of descriptors that counts", "domain: d\ndescriptors:\n  - key: a\n    descriptors: [~]\n", "yaml file contains list of type other than map: <nil>"},
		{"list as a key in metadata", rule("    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata: {? [x] : 1}\n"), "line 5: invalid map key: a list or a mapping"},
		{"mapping as a key in metadata", rule("    rate_limit: {unit: second, requests_per_unit: 1}\n    metadata: {? {a: b} : 1}\n"), "invalid map key: a list or a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDomain("v.yaml", []byte(tc.yaml))
			if tc.want != "" {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrConfig)
				assert.Contains(t, err.Error(), tc.want)
				return
			}
			require.NoError(t, err)
			r, _ := d.match(kv("k", "x"))
			require.NotNil(t, r)
			assert.Equal(t, uint32(2), r.RequestsPerUnit, "the value that counts")
		})
	}
}

// TestRuleNameNotUTF8IsAnError: a rule's name is sent back in every
// response's current_limit, a protobuf string, which must be UTF-8: a name
// given as !!binary with bytes that are not loaded, and every request the
// rule decided then failed to be encoded (gRPC Internal, /json 500). It is
// an error at load naming the file and the rule.
func TestRuleNameNotUTF8IsAnError(t *testing.T) {
	_, err := ParseDomain("bin.yaml", []byte("domain: bin\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 5, name: !!binary 6Q==}\n"))
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "bin.yaml")
	assert.ErrorContains(t, err, "bin.k: rate_limit name")
	assert.ErrorContains(t, err, "not UTF-8")

	d, err := ParseDomain("ok.yaml", []byte("domain: ok\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 5, name: !!binary w6k=}\n"))
	require.NoError(t, err, "a name of UTF-8 bytes, given as !!binary")
	assert.Equal(t, "é", d.Rules[0].Name)
}
