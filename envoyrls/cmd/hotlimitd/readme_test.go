package main

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMEBoundsAreTheCommands: the bounds and defaults README.md's
// hotlimitd section gives in prose (what a client of each server may send
// and how long it may take, the drain, the reload interval, Redis's timeouts
// and lease) are the values the command runs with, so that an operator who
// sizes Envoy's timeouts or a proxy's limits by the README gets what it says.
func TestREADMEBoundsAreTheCommands(t *testing.T) {
	var f flags
	fs := newFlagSet(&f)
	flagDefault := func(name string) time.Duration {
		t.Helper()
		d, err := time.ParseDuration(fs.Lookup(name).DefValue)
		require.NoError(t, err, "-%s", name)
		return d
	}
	secs := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'g', -1, 64) }
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	kib := func(n int) string { return strconv.Itoa(n >> 10) }
	mib := func(n int) string { return strconv.Itoa(n >> 20) }

	readmecheck.CheckClaims(t, readmecheck.Prose(t, "../../../README.md", "Envoy rate limit service (hotlimitd)"),
		readmecheck.Claim{Pattern: "`-reload-interval`, (\\S+) s, at least", Want: secs(flagDefault("reload-interval"))},
		readmecheck.Claim{Pattern: "`-reload-interval`, \\S+ s, at least (\\S+) ms", Want: ms(minReload)},
		readmecheck.Claim{Pattern: `more than (\d+) descriptors or \d+ entries in one \(refused unread`, Want: strconv.Itoa(envoyrls.MaxDescriptors)},
		readmecheck.Claim{Pattern: `more than \d+ descriptors or (\d+) entries in one \(refused unread`, Want: strconv.Itoa(envoyrls.MaxEntries)},
		readmecheck.Claim{Pattern: `431 for headers over (\d+) KiB`, Want: kib(httpLimits.headerBytes)},
		readmecheck.Claim{Pattern: `A client has (\d+) s to send its headers`, Want: secs(httpLimits.readHeader)},
		readmecheck.Claim{Pattern: `send its headers and (\d+) s for the whole request`, Want: secs(httpLimits.read)},
		readmecheck.Claim{Pattern: `a response (\d+) s to be written`, Want: secs(httpLimits.write)},
		readmecheck.Claim{Pattern: `closed after (\d+) minutes idle`, Want: strconv.Itoa(int(httpLimits.idle / time.Minute))},
		readmecheck.Claim{Pattern: `On gRPC, a message may be (\d+) MiB`, Want: mib(grpcLimits.recvBytes)},
		readmecheck.Claim{Pattern: `and a call's headers (\d+) KiB`, Want: kib(int(grpcLimits.headerBytes))},
		readmecheck.Claim{Pattern: `a connection takes up to (\d+) calls at once`, Want: strconv.Itoa(int(grpcLimits.streams))},
		readmecheck.Claim{Pattern: `one that sends nothing is closed after (\d+) s`, Want: secs(grpcLimits.handshake)},
		readmecheck.Claim{Pattern: "within `-drain` \\((\\d+) s\\)", Want: secs(flagDefault("drain"))},
		readmecheck.Claim{Pattern: "the longer of `-redis-timeout` and (\\d+) s", Want: secs(handlersGrace)},
		readmecheck.Claim{Pattern: "`-redis-lease-ttl`, (\\d+) ms by default", Want: ms(flagDefault("redis-lease-ttl"))},
		readmecheck.Claim{Pattern: "`-redis-timeout`, (\\d+) ms by default", Want: ms(flagDefault("redis-timeout"))},
		readmecheck.Claim{Pattern: "a `PING`, within (\\d+) s", Want: secs(redisStartup)})
}

// TestMaxKeysWithRedisOnlyUnderLocal: README.md's "Memory" says that with
// -redis, -max-keys applies only with -redis-failure local, whose fallback
// holds keys in memory. Its bound on distinct limit overrides shows it:
// under local, -max-keys 1000000 keeps 4 of them, and a request with a
// fifth is ResourceExhausted; under open and closed no cap applies, and
// five distinct overrides are each answered, Redis being down.
func TestMaxKeysWithRedisOnlyUnderLocal(t *testing.T) {
	d, err := envoyrls.ParseDomain("m.yaml", []byte("domain: m\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := envoyrls.NewConfig(d)
	require.NoError(t, err)
	for _, tc := range []struct {
		failure string
		capped  bool
	}{{"local", true}, {"open", false}, {"closed", false}} {
		t.Run(tc.failure, func(t *testing.T) {
			f, err := parse([]string{"-config", t.TempDir(), "-redis", "127.0.0.1:1", "-redis-failure", tc.failure, "-max-keys", "1000000"}, io.Discard)
			require.NoError(t, err)
			opts, client, err := f.options(slog.New(slog.DiscardHandler), nil)
			require.NoError(t, err)
			t.Cleanup(func() { _ = client.Close() })
			s, err := envoyrls.New(cfg, append(opts, envoyrls.WithLogger(slog.New(slog.DiscardHandler)))...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			for i := range 5 {
				req := &pb.RateLimitRequest{Domain: "m", Descriptors: []*rlext.RateLimitDescriptor{{
					Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}},
					Limit:   &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: uint32(10 + i), Unit: typev3.RateLimitUnit_MINUTE},
				}}}
				_, err := s.ShouldRateLimit(context.Background(), req)
				if tc.capped && i == 4 {
					assert.Equal(t, codes.ResourceExhausted, status.Code(err), "override %d: past the bound -max-keys sets", i)
					continue
				}
				assert.NoError(t, err, "override %d", i)
			}
		})
	}
}
