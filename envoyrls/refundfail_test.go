package envoyrls

import (
	"context"
	"log/slog"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
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
// code. Off (WithBackendErrors(false)), the failure policy answers it.
func TestRefundWhenTheBackendFails(t *testing.T) {
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	build := func(errs bool) *Server {
		s, err := New(cfg, WithLogger(slog.New(slog.DiscardHandler)), WithBackendErrors(errs),
			WithLimiterOptions(hotlimit.WithFactory(redislimit.Factory(client, redislimit.WithFailPolicy(redislimit.FailOpen)))))
		require.NoError(t, err)
		return s
	}
	refund := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
		Entries:        []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
		HitsAddend:     wrapperspb.UInt64(2),
		IsNegativeHits: true,
	}}}

	s := build(true)
	_, err = s.ShouldRateLimit(context.Background(), refund)
	assert.Equal(t, codes.Unavailable, status.Code(err), "nothing was given back: %v", err)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.ShouldRateLimit(ctx, refund)
	assert.Equal(t, codes.Canceled, status.Code(err), "%v", err)

	resp, err := build(false).ShouldRateLimit(context.Background(), refund)
	require.NoError(t, err, "the failure policy answers")
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
}
