package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
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
)

// TestREADMEBoundsAreTheCommands: the bounds and defaults README.md's
// hotlimitd section gives in prose (what a client of each server may send
// and how long it may take, the drain, the reload interval, Redis's timeouts
// and lease) are the values the command runs with, so that an operator who
// sizes Envoy's timeouts or a proxy's limits by the README gets what it says.
func TestREADMEBoundsAreTheCommands(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "## Envoy rate limit service (hotlimitd)")
	require.GreaterOrEqual(t, start, 0)
	section = section[start+2:]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	section = strings.Join(strings.Fields(section), " ") // prose wraps anywhere

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

	for _, c := range []struct {
		re, want string
	}{
		{"`-reload-interval`, (\\S+) s, at least", secs(flagDefault("reload-interval"))},
		{"`-reload-interval`, \\S+ s, at least (\\S+) ms", ms(minReload)},
		{`more than (\d+) descriptors or \d+ entries in one \(refused unread`, strconv.Itoa(envoyrls.MaxDescriptors)},
		{`more than \d+ descriptors or (\d+) entries in one \(refused unread`, strconv.Itoa(envoyrls.MaxEntries)},
		{`431 for headers over (\d+) KiB`, kib(httpLimits.headerBytes)},
		{`A client has (\d+) s to send its headers`, secs(httpLimits.readHeader)},
		{`send its headers and (\d+) s for the whole request`, secs(httpLimits.read)},
		{`a response (\d+) s to be written`, secs(httpLimits.write)},
		{`closed after (\d+) minutes idle`, strconv.Itoa(int(httpLimits.idle / time.Minute))},
		{`On gRPC, a message may be (\d+) MiB`, mib(grpcLimits.recvBytes)},
		{`and a call's headers (\d+) KiB`, kib(int(grpcLimits.headerBytes))},
		{`a connection takes up to (\d+) calls at once`, strconv.Itoa(int(grpcLimits.streams))},
		{`one that sends nothing is closed after (\d+) s`, secs(grpcLimits.handshake)},
		{"within `-drain` \\((\\d+) s\\)", secs(flagDefault("drain"))},
		{"the longer of `-redis-timeout` and (\\d+) s", secs(handlersGrace)},
		{"`-redis-lease-ttl`, (\\d+) ms by default", ms(flagDefault("redis-lease-ttl"))},
		{"`-redis-timeout`, (\\d+) ms by default", ms(flagDefault("redis-timeout"))},
		{"a `PING`, within (\\d+) s", secs(redisStartup)},
	} {
		m := regexp.MustCompile(c.re).FindStringSubmatch(section)
		if assert.NotNil(t, m, "README.md's hotlimitd section says %s", c.re) {
			assert.Equal(t, c.want, m[1], "README.md: %s", c.re)
		}
	}
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
