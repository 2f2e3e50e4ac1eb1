package envoyrls

import (
	"context"
	"log/slog"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
)

// TestNegativeHitsGoToRedisWindow: negative hits given back to a rule on
// Redis go to the window that Redis counts in now, whatever the server's
// own clock reads: here it reads a day away from Redis's TIME, the next
// day's window or the previous one (a server clock skewed against Redis's
// across a window's boundary), and a fixed window of 5 a day that spent
// its 5 gets 2 back, which then pass. The limiters read Redis's TIME, as
// hotlimitd's do: the factory leaves out the server's clock.
func TestNegativeHitsGoToRedisWindow(t *testing.T) {
	addr, _ := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	redisNow, err := client.Time(context.Background()).Result()
	require.NoError(t, err)
	day := int64(24 * time.Hour)
	start := redisNow.UnixNano() / day * day // Redis's window
	d, err := ParseDomain("web.yaml", []byte("domain: web\ndescriptors:\n  - key: ip\n    rate_limit: {unit: day, requests_per_unit: 5, algorithm: FixedWindow}\n"))
	require.NoError(t, err)
	cfg, err := NewConfig(d)
	require.NoError(t, err)
	request := func(hits uint64, negative bool) *pb.RateLimitRequest {
		return &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{
			Entries:        []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}},
			HitsAddend:     wrapperspb.UInt64(hits),
			IsNegativeHits: negative,
		}}}
	}
	for _, tc := range []struct {
		name  string
		clock int64 // the server's, ns since the Unix epoch
	}{
		{"ahead", start + day + int64(time.Second)},
		{"behind", start - int64(time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			factory := func(c hotlimit.Config, _ ...hotlimit.Option) (hotlimit.Limiter, error) {
				return redislimit.New(client, c, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second))
			}
			s, err := New(cfg, WithClock(func() int64 { return tc.clock }), WithLogger(slog.New(slog.DiscardHandler)),
				WithLimiterOptions(hotlimit.WithFactory(factory)))
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			code := func(req *pb.RateLimitRequest) pb.RateLimitResponse_Code {
				t.Helper()
				resp, err := s.ShouldRateLimit(context.Background(), req)
				require.NoError(t, err)
				return resp.OverallCode
			}
			require.Equal(t, pb.RateLimitResponse_OK, code(request(5, false)), "the day's 5")
			require.Equal(t, pb.RateLimitResponse_OVER_LIMIT, code(request(1, false)), "spent")
			require.Equal(t, pb.RateLimitResponse_OK, code(request(2, true)), "2 given back")
			assert.Equal(t, pb.RateLimitResponse_OK, code(request(2, false)), "the 2 given back pass")
			assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, code(request(1, false)), "and no more")
		})
	}
}
