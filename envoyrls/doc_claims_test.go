package envoyrls_test

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/envoyrls"
)

// TestNoResponseHeadersByDefault: without WithHeaders a response asks Envoy
// to add no header, within the limit, over it, or for a descriptor of no
// rule; WithHeaders(HeadersReference) is what adds them.
func TestNoResponseHeadersByDefault(t *testing.T) {
	cfg := exampleConfig("api.yaml", `
domain: api
descriptors:
  - key: user
    rate_limit: {unit: minute, requests_per_unit: 1}
`)
	for _, tc := range []struct {
		name    string
		opts    []envoyrls.Option
		headers bool
	}{
		{"default", nil, false},
		{"HeadersReference", []envoyrls.Option{envoyrls.WithHeaders(envoyrls.HeadersReference)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var now atomic.Int64
			opts := append([]envoyrls.Option{envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler))}, tc.opts...)
			srv, err := envoyrls.New(cfg, opts...)
			require.NoError(t, err)
			defer srv.Close()
			for i, key := range []string{"user", "user", "other"} {
				resp, err := srv.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api",
					Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: "a"}}}}})
				require.NoError(t, err)
				if tc.headers && key == "user" {
					assert.NotEmpty(t, resp.ResponseHeadersToAdd, "request %d", i)
				} else {
					assert.Empty(t, resp.ResponseHeadersToAdd, "request %d", i)
				}
			}
		})
	}
}

// TestMetricsWatchKeysComparesNamesAsTheirLabels: a second WatchKeys of a
// name that reads as the same label (U+FFFD for bytes that are not UTF-8)
// replaces the first, and a nil keys under such a name removes it.
func TestMetricsWatchKeysComparesNamesAsTheirLabels(t *testing.T) {
	m := envoyrls.NewMetrics()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	m.WatchKeys("n\xff", func() int { return 1 })
	m.WatchKeys("n\xfe", func() int { return 9 })
	assert.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP hotlimit_keys Keys held, by limiter.
# TYPE hotlimit_keys gauge
hotlimit_keys{limiter="n`+"\uFFFD"+`"} 9
`), "hotlimit_keys"))
	m.WatchKeys("n\xfd", nil)
	n, err := testutil.GatherAndCount(reg, "hotlimit_keys")
	require.NoError(t, err)
	assert.Zero(t, n)
}
