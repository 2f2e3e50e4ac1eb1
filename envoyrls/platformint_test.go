package envoyrls

import (
	"context"
	"math"
	"testing"
	"time"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/redislimit"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// is32 is set where an int stops at 2^31-1, below a requests_per_unit's
// 2^32-1.
const is32 = math.MaxInt < math.MaxUint32

// TestConfigRequestsPerUnitBeyondPlatformInt: a YAML rule of 3e9 requests
// per unit loads on a 64-bit platform; on a 32-bit one, whose int cannot
// hold it, the error names the value (not a negative limit it wrapped to).
func TestConfigRequestsPerUnitBeyondPlatformInt(t *testing.T) {
	d, err := ParseDomain("big.yaml", []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: day\n      requests_per_unit: 3000000000\n"))
	if is32 {
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), "big.yaml: d.k: rate_limit requests_per_unit 3000000000 exceeds this platform's int (at most 2147483647)")
		return
	}
	require.NoError(t, err)
	assert.Equal(t, int64(3_000_000_000), int64(d.Rules[0].Limit.Limit))
}

// TestAddendBeyondPlatformInt: against a Redis limit of 2^31-1 a day, an
// addend of 2^32 (a descriptor's) or 3e9 (the request's) is over on a
// 64-bit platform, counted in full. On a 32-bit one, whose int stops at
// 2^31-1, it is an InvalidArgument error naming the addend, never
// clamped to 2^31-1 and allowed; so is a refund's.
func TestAddendBeyondPlatformInt(t *testing.T) {
	addr, _ := startRedis(t)
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	f := redislimit.Factory(client, redislimit.WithPrefix(t.Name()+":"), redislimit.WithTimeout(10*time.Second), redislimit.WithFailPolicy(redislimit.FailClosed))
	h := inProcess(t, WithLimiterOptions(hotlimit.WithFactory(f)))
	d := desc("override", "bytes"+h.run)
	d.Limit = &rlext.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: math.MaxInt32, Unit: typev3.RateLimitUnit_DAY}
	for _, tc := range []struct {
		name   string
		hits   uint32
		addend *wrapperspb.UInt64Value
		refund bool
		want64 pb.RateLimitResponse_Code
		want32 string
	}{
		{"descriptor's", 0, wrapperspb.UInt64(1 << 32), false, over, "descriptors[0].hits_addend 4294967296 exceeds this platform's int (at most 2147483647)"},
		{"request's", 3_000_000_000, nil, false, over, "hits_addend 3000000000 exceeds this platform's int (at most 2147483647)"},
		// A refund gives back at most the limit on 64-bit.
		{"refund", 0, wrapperspb.UInt64(math.MaxUint64), true, ok, "descriptors[0].hits_addend 18446744073709551615 exceeds this platform's int (at most 2147483647)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d.HitsAddend, d.IsNegativeHits = tc.addend, tc.refund
			resp, err := h.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "conf", Descriptors: []*rlext.RateLimitDescriptor{d}, HitsAddend: tc.hits})
			if is32 {
				require.Error(t, err, "allowed as if 2^31-1: %v", resp)
				assert.Equal(t, codes.InvalidArgument, status.Code(err))
				assert.Contains(t, err.Error(), "desc = "+tc.want32)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want64, resp.OverallCode)
		})
	}
	d.HitsAddend, d.IsNegativeHits = nil, false
	resp := h.call(t, "conf", 0, d)
	assert.Equal(t, ok, resp.OverallCode, "nothing was counted")
	assert.Equal(t, uint32(math.MaxInt32-1), resp.Statuses[0].LimitRemaining, "after this call's one hit")
}
