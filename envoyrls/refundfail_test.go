package envoyrls

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/hotlimit/hotlimit/service"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRefundWhenTheBackendFails: a descriptor of negative hits whose
// give-back the backend fails (Redis unreachable) gets Unavailable, as a
// descriptor that takes does, rather than OK as if its hits were given
// back; under a caller's context already done, it gets the context's
// code. Off (WithBackendErrors(false)), the failure policy answers it, and
// the log says so.
func TestRefundWhenTheBackendFails(t *testing.T) {
	cfg := webPerHour(t)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	var logs lockedBuffer
	build := func(errs bool) *Server {
		s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), WithBackendErrors(errs),
			WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailOpen)))))
		require.NoError(t, err)
		return s
	}
	refund := refundOfTwo()

	s := build(true)
	_, err := s.ShouldRateLimit(context.Background(), refund)
	assert.Equal(t, codes.Unavailable, status.Code(err), "nothing was given back: %v", err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.ShouldRateLimit(ctx, refund)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)

	resp, err := build(false).ShouldRateLimit(context.Background(), refund)
	require.NoError(t, err, "the failure policy answers")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	// The log says that the hits may not have been given back, as it says
	// of an all-or-nothing request's refunds: otherwise nothing tells the
	// operator.
	assert.Contains(t, logs.String(), "rate limit backend failed a refund")
}

// webPerHour is the configuration of these tests: 5 an hour per ip.
func webPerHour(t *testing.T) *Config {
	t.Helper()
	return configOf(t, "web.yaml", "domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: 5}\n")
}

// configOf returns the configuration of the one domain the YAML file name
// holds.
func configOf(t *testing.T, name, yaml string) *Config {
	t.Helper()
	d, err := ParseDomain(name, []byte(yaml))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	return cfg
}

// refundOfTwo gives 2 hits back to ip 1.
func refundOfTwo() *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries:        []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
		HitsAddend:     wrapperspb.UInt64(2),
		IsNegativeHits: true,
	}}}
}

// readFailingRefunder gives back as an in-memory limiter does, counting the
// give-backs, but fails every read of a key's state (TakeContext), as a
// Redis that goes down between a give-back and the read after it.
type readFailingRefunder struct {
	hotlimit.Refunder
	refunds *atomic.Int32
}

func (l readFailingRefunder) TakeReceiptContext(ctx context.Context, key string, n int) (hotlimit.Decision, hotlimit.Receipt, error) {
	d, r := l.TakeReceipt(key, n)
	return d, r, nil
}

func (l readFailingRefunder) RefundContext(_ context.Context, key string, r hotlimit.Receipt) error {
	l.refunds.Add(1)
	l.Refund(key, r)
	return nil
}

func (l readFailingRefunder) TakeContext(context.Context, string, int) (hotlimit.Decision, error) {
	return hotlimit.Decision{}, errors.New("backend: connection reset")
}

// TestRefundGivenBackThenReadFails: a give-back the backend made is
// answered OK even when the read of the key's state after it fails; an
// Unavailable would tell the caller that the backend failed the give-back,
// and one that retries it gives the hits back twice. The failed read is
// logged.
func TestRefundGivenBackThenReadFails(t *testing.T) {
	cfg := webPerHour(t)
	var refunds atomic.Int32
	factory := func(c hotlimit.Config, opts ...hotlimit.Option) (hotlimit.Limiter, error) {
		lim, err := service.NewLimiter(c, opts...)
		if err != nil {
			return nil, err
		}
		return readFailingRefunder{Refunder: lim.(hotlimit.Refunder), refunds: &refunds}, nil
	}
	var logs bytes.Buffer
	s, err := New(cfg, WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))), WithBackendErrors(true),
		WithLimiterOptions(hotlimit.WithFactory(factory)))
	require.NoError(t, err)
	refund := refundOfTwo()
	resp, err := s.ShouldRateLimit(context.Background(), refund)
	require.NoError(t, err, "the hits were given back")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	assert.Equal(t, int32(1), refunds.Load())
	assert.Contains(t, logs.String(), "connection reset", "the failed read is logged")
}
