package envoyrls_test

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/envoyrls"
	"github.com/hotlimit/hotlimit/internal/readmecheck"
)

// TestREADMEConfigsLoad reads every hotlimitd configuration README.md shows
// (its YAML blocks that begin with "domain:"; the others are Envoy's) as
// hotlimitd reads a file of its directory, and builds a server of each, so
// that the configurations the README shows load, warnings and ranges
// included.
func TestREADMEConfigsLoad(t *testing.T) {
	md, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	checked := 0
	for _, b := range readmecheck.ExtractLang(string(md), "yaml") {
		if !strings.HasPrefix(b.Code, "domain:") {
			continue
		}
		checked++
		d, err := envoyrls.ParseDomain("README.md", []byte(b.Code))
		if !assert.NoError(t, err, "README.md:%d", b.Line) {
			continue
		}
		cfg, err := envoyrls.NewConfig(d)
		if !assert.NoError(t, err, "README.md:%d", b.Line) {
			continue
		}
		assert.Empty(t, cfg.Warnings(), "README.md:%d", b.Line)
		_, err = envoyrls.New(cfg)
		assert.NoError(t, err, "README.md:%d", b.Line)
	}
	assert.Equal(t, 3, checked, "hotlimitd configurations in README.md: the reference's example, the extensions, rl.yaml for Envoy")
}

// TestIdleKeysAreSweptAsNewOnesCome: README.md's "Memory" says hotlimitd's
// limiters sweep idle keys as new ones come once a limiter holds 16,384
// keys, as hotlimit.WithAutoSweep(16384), and WithLimiterOptions passes its
// options to every limiter, so an auto-sweep given there is the one that
// counts: 0 keeps every key until a Sweep, a lower threshold starts sooner.
// One descriptor value a request, each idle once the clock has moved past
// its window.
func TestIdleKeysAreSweptAsNewOnesCome(t *testing.T) {
	const threshold = 1 << 14
	for _, tc := range []struct {
		name  string
		opts  []envoyrls.Option
		keys  int
		swept bool // the keys held are fewer than those sent
	}{
		{"default, below the threshold", nil, threshold, false},
		{"default, past the threshold", nil, threshold + 4096, true},
		{"WithAutoSweep(0)", []envoyrls.Option{envoyrls.WithLimiterOptions(hotlimit.WithAutoSweep(0))}, threshold + 4096, false},
		{"WithAutoSweep(64)", []envoyrls.Option{envoyrls.WithLimiterOptions(hotlimit.WithAutoSweep(64))}, 4096, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := envoyrls.ParseDomain("sweep.yaml", []byte("domain: sweep\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"))
			require.NoError(t, err)
			cfg, err := envoyrls.NewConfig(d)
			require.NoError(t, err)
			var now atomic.Int64
			now.Store(int64(time.Hour))
			opts := append([]envoyrls.Option{envoyrls.WithClock(now.Load), envoyrls.WithLogger(slog.New(slog.DiscardHandler))}, tc.opts...)
			s, err := envoyrls.New(cfg, opts...)
			require.NoError(t, err)
			for i := range tc.keys {
				now.Add(int64(2 * time.Second)) // every key sent before is idle
				req := &pb.RateLimitRequest{Domain: "sweep", Descriptors: []*rlext.RateLimitDescriptor{{
					Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: strconv.Itoa(i)}}}}}
				resp, err := s.ShouldRateLimit(context.Background(), req)
				require.NoError(t, err)
				require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "value %d", i)
			}
			if tc.swept {
				assert.Less(t, s.Len(), tc.keys, "idle keys swept")
			} else {
				assert.Equal(t, tc.keys, s.Len(), "no key swept")
			}
		})
	}
}

// TestLimiterOptionsClockIsTheServers: WithLimiterOptions passes its options
// to every limiter, so a hotlimit.WithClock among them is the clock the
// limiters decide by, and the server's too (duration_until_reset counts
// from it), unless WithClock gives the server one, which then wins. A rule
// of one an hour, on a fake clock an hour apart each request: every request
// passes on the fake clock, and the fake clock's own reading at 1000 h
// 15 min leaves 45 min of the hour.
func TestLimiterOptionsClockIsTheServers(t *testing.T) {
	d, err := envoyrls.ParseDomain("clock.yaml", []byte("domain: clock\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"))
	require.NoError(t, err)
	cfg, err := envoyrls.NewConfig(d)
	require.NoError(t, err)
	var fake, server atomic.Int64
	for _, tc := range []struct {
		name  string
		opts  []envoyrls.Option
		clock *atomic.Int64 // the one the decisions follow
	}{
		{"limiter options", []envoyrls.Option{envoyrls.WithLimiterOptions(hotlimit.WithClock(fake.Load))}, &fake},
		{"WithClock wins", []envoyrls.Option{envoyrls.WithLimiterOptions(hotlimit.WithClock(fake.Load)), envoyrls.WithClock(server.Load)}, &server},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake.Store(int64(1000*time.Hour + 15*time.Minute))
			server.Store(int64(2000*time.Hour + 15*time.Minute))
			s, err := envoyrls.New(cfg, append([]envoyrls.Option{envoyrls.WithLogger(slog.New(slog.DiscardHandler))}, tc.opts...)...)
			require.NoError(t, err)
			req := &pb.RateLimitRequest{Domain: "clock", Descriptors: []*rlext.RateLimitDescriptor{{
				Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}
			for i := range 3 {
				resp, err := s.ShouldRateLimit(context.Background(), req)
				require.NoError(t, err)
				assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "request %d, an hour after the one before", i)
				assert.Equal(t, 45*time.Minute, resp.Statuses[0].DurationUntilReset.AsDuration(), "request %d", i)
				tc.clock.Add(int64(time.Hour))
			}
		})
	}
}
