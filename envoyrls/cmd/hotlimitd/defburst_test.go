package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultBurstFlag: the library's default burst
// (envoyrls.WithLimiterOptions(hotlimit.WithBurst(n))) had no flag, so an
// operator could give the token buckets and GCRAs of a configuration no
// burst but one written into each rule. -default-burst 5, on the command
// line or in the environment, lets a TokenBucket and a GCRA rule of 2 an
// hour that set no burst pass 5 requests at once, and so a descriptor's
// own limit under the token bucket, or under a GCRA rule that sets a
// burst of 3, which an override never takes, in memory and on Redis,
// while a FixedWindow rule passes its 2; without it, each passes its 2.
// -default-burst 1 is a burst too: one request at once.
func TestDefaultBurstFlag(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`domain: web
descriptors:
  - {key: alg, value: tb, rate_limit: {algorithm: TokenBucket, unit: hour, requests_per_unit: 2}}
  - {key: alg, value: gcra, rate_limit: {algorithm: GCRA, unit: hour, requests_per_unit: 2}}
  - {key: alg, value: fw, rate_limit: {algorithm: FixedWindow, unit: hour, requests_per_unit: 2}}
  - {key: own, rate_limit: {algorithm: TokenBucket, unit: hour, requests_per_unit: 1000}}
  - {key: ownb, rate_limit: {algorithm: GCRA, unit: hour, requests_per_unit: 1000, burst: 3}}
`), 0o644))
	redisAddr, _ := startRedis(t, "")
	for _, tc := range []struct {
		name      string
		args      []string
		env       string
		burst, fw int
	}{
		{name: "none", burst: 2, fw: 2},
		{name: "flag", args: []string{"-default-burst", "5"}, burst: 5, fw: 2},
		{name: "env", env: "5", burst: 5, fw: 2},
		{name: "one", args: []string{"-default-burst", "1"}, burst: 1, fw: 2}, // 1 is a burst, not "none"
		{name: "redis", args: []string{"-default-burst", "5", "-redis", redisAddr, "-redis-prefix", "defburst:", "-redis-timeout", "10s"}, burst: 5, fw: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv("HOTLIMITD_DEFAULT_BURST", tc.env)
			}
			srv := startServer(t, append([]string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", ""}, tc.args...), io.Discard)
			client := pb.NewRateLimitServiceClient(srv.conn)
			passed := func(d *rlext.RateLimitDescriptor) int {
				n := 0
				for range 7 {
					resp, err := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{d}})
					require.NoError(t, err)
					if resp.OverallCode == pb.RateLimitResponse_OK {
						n++
					}
				}
				return n
			}
			entry := func(key, value string) *rlext.RateLimitDescriptor {
				return &rlext.RateLimitDescriptor{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: key, Value: value}}}
			}
			assert.Equal(t, tc.burst, passed(entry("alg", "tb")), "TokenBucket")
			assert.Equal(t, tc.burst, passed(entry("alg", "gcra")), "GCRA")
			assert.Equal(t, tc.fw, passed(entry("alg", "fw")), "FixedWindow has no burst")
			own := entry("own", tc.name)
			own.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 2, Unit: typev3.RateLimitUnit_HOUR}
			assert.Equal(t, tc.burst, passed(own), "a descriptor's own limit under the TokenBucket rule")
			ownb := entry("ownb", tc.name)
			ownb.Limit = own.Limit
			assert.Equal(t, tc.burst, passed(ownb), "a descriptor's own limit under a GCRA rule of burst 3, which it does not take")
			srv.stop(t)
		})
	}
}
