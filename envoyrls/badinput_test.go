package envoyrls_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	common "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit/envoyrls"
)

const badInputYAML = `domain: d
descriptors:
  - key: k
    rate_limit:
      unit: minute
      requests_per_unit: 1
`

// badInputConfig returns a Config of one domain "d", whose key k is
// limited to 1 per minute, and a directory holding it.
func badInputConfig(t *testing.T) (*envoyrls.Config, string) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "d.yaml"), []byte(badInputYAML), 0o600))
	cfg, err := envoyrls.LoadDir(dir)
	require.NoError(t, err)
	return cfg, dir
}

// request asks for hits of key k=v in domain d.
func request(hits uint32) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "d", HitsAddend: hits, Descriptors: []*common.RateLimitDescriptor{
		{Entries: []*common.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}}
}

// TestBadInputToAServerNewDidNotMake: a nil or zero Server. Reload of the
// zero Server returned nil, as if it had put the configuration in force,
// but its Len and Close then panicked on the overrides it never made, as
// did ReloadDir (on its nil logger) and Close and Len before any Reload.
// Reload, ReloadDir and WatchDir now refuse it with an error that says to
// call New, Close returns nil and Len 0; the other methods panic, as the
// doc of Server says.
func TestBadInputToAServerNewDidNotMake(t *testing.T) {
	const notMade = "envoyrls: the Server was not made by New: make it with envoyrls.New"
	cfg, dir := badInputConfig(t)
	for _, unmade := range []struct {
		name string
		make func() *envoyrls.Server
	}{{"nil", func() *envoyrls.Server { return nil }}, {"zero", func() *envoyrls.Server { return &envoyrls.Server{} }}} {
		t.Run(unmade.name, func(t *testing.T) {
			s := unmade.make()
			require.NotPanics(t, func() {
				assert.EqualError(t, s.Reload(cfg), notMade)
				assert.EqualError(t, s.Reload(nil), notMade)
				assert.EqualError(t, s.ReloadDir(dir), notMade)
				var heard []error
				s.WatchDir(context.Background(), dir, 1, func(err error) { heard = append(heard, err) })
				require.Len(t, heard, 1)
				assert.EqualError(t, heard[0], notMade)
				s.WatchDir(context.Background(), dir, 0, func(err error) { t.Error("an interval of 0 watches nothing") })
				assert.NoError(t, s.Close())
				assert.NoError(t, s.Close())
				assert.Zero(t, s.Len())
			})
			assert.Panics(t, func() { s.Config() })
			assert.Panics(t, func() { _, _ = s.ShouldRateLimit(context.Background(), request(1)) })
		})
	}
}

// TestBadInputToAServer gives a Server, its Config and its Metrics what a
// careless caller could, and checks each documented outcome.
func TestBadInputToAServer(t *testing.T) {
	ctx := context.Background()
	quiet := envoyrls.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	newServer := func(t *testing.T) (*envoyrls.Server, string) {
		cfg, dir := badInputConfig(t)
		s, err := envoyrls.New(cfg, quiet)
		require.NoError(t, err)
		return s, dir
	}
	code := func(err error) codes.Code { return status.Code(err) }
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"New of a nil Config serves no domain", func(t *testing.T) {
			s, err := envoyrls.New(nil, nil, quiet, envoyrls.WithClock(nil), envoyrls.WithLogger(nil), envoyrls.WithObserver(nil), envoyrls.WithLimiterOptions(nil))
			require.NoError(t, err)
			resp, err := s.ShouldRateLimit(ctx, request(1))
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
		}},
		{"requests that are not well formed are InvalidArgument", func(t *testing.T) {
			s, _ := newServer(t)
			for _, req := range []*pb.RateLimitRequest{nil, {}, {Domain: "d"},
				{Domain: "d", Descriptors: []*common.RateLimitDescriptor{nil}},
				{Domain: "d", Descriptors: []*common.RateLimitDescriptor{{Entries: []*common.RateLimitDescriptor_Entry{nil}}}}} {
				resp, err := s.ShouldRateLimit(ctx, req)
				assert.Equal(t, codes.InvalidArgument, code(err), "%v", req)
				assert.Nil(t, resp)
			}
		}},
		{"a nil context decides as Background", func(t *testing.T) {
			s, _ := newServer(t)
			resp, err := s.ShouldRateLimit(nil, request(1)) //lint:ignore SA1012 a nil context is what is tested
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
		}},
		{"hits beyond the limit are over it", func(t *testing.T) {
			// the most a 32-bit int holds: beyond it, a 32-bit platform
			// refuses the request (see platformint_test.go)
			s, _ := newServer(t)
			resp, err := s.ShouldRateLimit(ctx, request(math.MaxInt32))
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, resp.OverallCode)
			resp, err = s.ShouldRateLimit(ctx, request(1))
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode, "nothing was spent")
		}},
		{"Reload of nil or an empty Config serves no domain", func(t *testing.T) {
			s, _ := newServer(t)
			require.NoError(t, s.Reload(nil))
			require.NoError(t, s.Reload(&envoyrls.Config{}))
			assert.Empty(t, s.Config().Domains())
		}},
		{"ReloadDir of no directory keeps the configuration", func(t *testing.T) {
			s, _ := newServer(t)
			assert.Error(t, s.ReloadDir(""))
			assert.Error(t, s.ReloadDir(filepath.Join(t.TempDir(), "missing")))
			assert.Len(t, s.Config().Domains(), 1)
		}},
		{"WatchDir under a nil context is refused", func(t *testing.T) {
			s, dir := newServer(t)
			var heard []error
			s.WatchDir(nil, dir, math.MaxInt64, func(err error) { heard = append(heard, err) }) //lint:ignore SA1012 a nil context is what is tested
			require.Len(t, heard, 1)
			assert.ErrorContains(t, heard[0], "nil Context")
			s.WatchDir(nil, dir, math.MinInt64, nil) //lint:ignore SA1012 an interval <= 0 returns first
		}},
		{"Close twice, then serve and reload", func(t *testing.T) {
			s, dir := newServer(t)
			require.NoError(t, s.Close())
			require.NoError(t, s.Close())
			resp, err := s.ShouldRateLimit(ctx, request(1))
			require.NoError(t, err)
			assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
			assert.NoError(t, s.ReloadDir(dir))
			assert.GreaterOrEqual(t, s.Len(), 0)
		}},
		{"the JSON handler refuses junk", func(t *testing.T) {
			s, _ := newServer(t)
			for _, body := range []string{"", "\xff", "null", "[]", `{"domain":"d"}`, `{"domain":"d","descriptors":[null]}`, strings.Repeat("[", 1<<16)} {
				w := httptest.NewRecorder()
				s.JSONHandler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/json", strings.NewReader(body)))
				assert.Equal(t, http.StatusBadRequest, w.Code, "%.20q", body)
			}
		}},
		{"configurations out of shape are refused", func(t *testing.T) {
			_, err := envoyrls.NewConfig(nil)
			assert.Error(t, err)
			for _, data := range []string{"", "\xff", "domain: [", "domain: d\ndescriptors: [{key: k, rate_limit: {unit: second, requests_per_unit: -1}}]"} {
				_, err = envoyrls.ParseDomain("\xff.yaml", []byte(data))
				assert.ErrorIs(t, err, envoyrls.ErrConfig, "%q", data)
			}
			_, err = envoyrls.LoadDir("")
			assert.Error(t, err)
		}},
		{"a nil or zero Config has nothing", func(t *testing.T) {
			for _, c := range []*envoyrls.Config{nil, {}} {
				assert.Empty(t, c.Domains())
				assert.Empty(t, c.Rules())
				assert.Empty(t, c.Warnings())
				r, known := c.Match("\xff", []envoyrls.Entry{{Key: "\xff"}})
				assert.Nil(t, r)
				assert.False(t, known)
			}
			assert.Zero(t, envoyrls.UnitDuration(math.MaxInt32))
			assert.Zero(t, envoyrls.UnitDuration(-1))
		}},
		{"nil and zero Metrics count nothing", func(t *testing.T) {
			var zero envoyrls.Metrics
			var none *envoyrls.Metrics
			for _, m := range []*envoyrls.Metrics{&zero, none} {
				m.ConfigLoaded(true)
				m.ObserveBackend("\xff")
				m.WatchKeys("\xff", nil)
				m.WatchKeys("", func() int { return math.MinInt })
			}
			assert.Error(t, zero.CheckObserver())
			assert.NoError(t, none.CheckObserver())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { require.NotPanics(t, func() { tc.check(t) }) })
	}
}
