package envoyrls

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// refScalars are YAML spellings of a descriptor's value (or key) and of a
// requests_per_unit that both servers load, each with the strings a
// request may send for it.
var refScalars = []struct {
	yaml       string
	candidates []string
}{
	{`yes`, []string{"yes", "true", "y"}},
	{`True`, []string{"True", "true"}},
	{`off`, []string{"off", "false"}},
	{`0x10`, []string{"0x10", "16"}},
	{`010`, []string{"010", "8", "10"}},
	{`0o10`, []string{"0o10", "8"}},
	{`0b11`, []string{"0b11", "3"}},
	{`1_000`, []string{"1_000", "1000"}},
	{`+5`, []string{"+5", "5"}},
	{`1:30`, []string{"1:30", "90", "5400"}},
	{`-0`, []string{"-0", "0"}},
	{`~`, []string{"", "~", "null"}},
	{`null`, []string{"", "null"}},
	{`2001-12-14`, []string{"2001-12-14", "2001-12-14 00:00:00 +0000 UTC"}},
	{`!!str 5`, []string{"5"}},
	{`!!binary aGVsbG8=`, []string{"hello", "aGVsbG8="}},
	{`"a\tb"`, []string{"a\tb", `a\tb`}},
	{`'it''s'`, []string{"it's", "it''s"}},
	{`a b`, []string{"a b"}},
	{`<<`, []string{"<<"}},
	{`=`, []string{"="}},
	{`"*"`, []string{"*", "anything"}},
}

// refLimits are spellings of requests_per_unit both servers load.
var refLimits = []string{"7", "0x10", "010", "0o10", "0b11", "1_000", "+5", "!!int 9"}

// TestReferenceScalars loads descriptors whose values, keys and limits are
// written in the YAML spellings above (and keys given twice, and merge
// keys) in both servers, asks each for every
// candidate string of each, and compares the answers: which strings a
// rule matches, and the limit it reports, show what each server read.
// It runs only with HOTLIMITD_REFERENCE set to the reference's binary, and
// needs redis-server:
//
//	HOTLIMITD_REFERENCE=/tmp/refbin go test -run TestReferenceScalars -v .
func TestReferenceScalars(t *testing.T) {
	bin := referenceBinary(t)
	redisAddr, _ := startRedis(t)
	var b strings.Builder
	b.WriteString("domain: s\ndescriptors:\n")
	for i, sc := range refScalars {
		fmt.Fprintf(&b, "  - key: v%d\n    value: %s\n    rate_limit: {unit: day, requests_per_unit: %d}\n", i, sc.yaml, 1000+i)
		if sc.yaml != "~" && sc.yaml != "null" && sc.yaml != `"*"` {
			fmt.Fprintf(&b, "  - key: %s\n    rate_limit: {unit: day, requests_per_unit: %d}\n", sc.yaml, 2000+i)
		}
	}
	for i, l := range refLimits {
		fmt.Fprintf(&b, "  - key: l%d\n    rate_limit:\n      unit: day\n      requests_per_unit: %s\n", i, l)
	}
	// A key given twice, and merge keys before and after the keys they
	// merge with.
	b.WriteString(`  - key: dup
    value: first
    value: second
    rate_limit: {unit: day, requests_per_unit: 5, requests_per_unit: 6}
  - key: base
    rate_limit: &base {unit: day, requests_per_unit: 7, name: base}
  - key: merged
    rate_limit: {<<: *base, requests_per_unit: 8}
  - key: mergedafter
    rate_limit: {requests_per_unit: 9, <<: *base}
  - key: mergedlist
    rate_limit: {<<: [{name: a, unit: hour}, *base], requests_per_unit: 10}
  - key: twice
    rate_limit: {unit: second, requests_per_unit: 11}
    rate_limit: {name: second}
  - key: mergedrule
    rate_limit: {unit: minute, requests_per_unit: 12}
    <<: {rate_limit: {name: merged}}
  - key: rulelist
    <<: [{rate_limit: {name: first}}, {rate_limit: {name: last, unit: hour, requests_per_unit: 13}}]
  - key: nulled
    rate_limit: {unit: second, requests_per_unit: 14}
    rate_limit: ~
`)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(b.String()), 0o644))
	cfg, err := LoadDir(dir)
	require.NoError(t, err, b.String())
	s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	hot := serve(t, s)
	refAddr, _ := startReferenceOn(t, bin, redisAddr, dir, strconv.FormatInt(time.Now().UnixNano(), 36)+"_")
	ref := dial(t, refAddr)

	ask := func(what string, d *rlext.RateLimitDescriptor) {
		t.Helper()
		req := &pb.RateLimitRequest{Domain: "s", Descriptors: []*rlext.RateLimitDescriptor{d}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rr, err := ref.ShouldRateLimit(ctx, req)
		require.NoError(t, err)
		hr, err := hot.ShouldRateLimit(ctx, req)
		require.NoError(t, err)
		r, h := rr.Statuses[0].CurrentLimit, hr.Statuses[0].CurrentLimit
		if r != nil {
			t.Logf("%s: the reference matches, limit %d", what, r.RequestsPerUnit)
		}
		assert.True(t, proto.Equal(r, h), "%s: reference %v, hotlimitd %v", what, r, h)
	}
	for i, sc := range refScalars {
		for _, c := range sc.candidates {
			ask(fmt.Sprintf("value %s as %q", sc.yaml, c), desc("v"+strconv.Itoa(i), c))
			if c != "" { // an empty key is refused (README: Moving from the reference)
				ask(fmt.Sprintf("key %s as %q", sc.yaml, c), desc(c, "x"))
			}
		}
	}
	for i, l := range refLimits {
		ask("requests_per_unit "+l, desc("l"+strconv.Itoa(i), "x"))
	}
	for _, d := range [][2]string{{"dup", "first"}, {"dup", "second"}, {"merged", "x"}, {"mergedafter", "x"}, {"mergedlist", "x"},
		{"twice", "x"}, {"mergedrule", "x"}, {"rulelist", "x"}, {"nulled", "x"}} {
		ask(d[0]+" "+d[1], desc(d[0], d[1]))
	}
}
