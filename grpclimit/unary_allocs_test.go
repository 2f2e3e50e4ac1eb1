package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/service"
)

// unaryAllocs returns the allocations of an allowed unary call through the
// interceptor made with opts, under rules, from a TCP peer seen before, in a
// context holding a stand-in transport stream.
func unaryAllocs(t *testing.T, rules service.Rules, opts ...grpclimit.Option) float64 {
	t.Helper()
	svc, err := service.New(allowAll)
	require.NoError(t, err)
	require.NoError(t, svc.Replace(rules))
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), &transportStream{})
	ctx = peer.NewContext(ctx, &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 51234}})
	icpt := grpclimit.UnaryServerInterceptor(svc, opts...)
	info := &grpc.UnaryServerInfo{FullMethod: unaryCall}
	_, err = icpt(ctx, nil, info, noop) // the peer's key and the pair's state now exist
	require.NoError(t, err)
	return testing.AllocsPerRun(100, func() {
		if _, err := icpt(ctx, nil, info, noop); err != nil {
			t.Fatal(err)
		}
	})
}

// severalLimits is a rule of two limits that pass every call of a test.
var severalLimits = service.Rules{Default: service.Limits{
	allowAll,
	{Algorithm: hotlimit.TokenBucket, Limit: 1 << 20, Window: time.Millisecond},
}}

// TestUnaryWithoutRateLimitHeadersAllocatesNothing: with the metadata off,
// an allowed unary call from a returning client allocates nothing, under a
// rule of one limit and under a rule of several, whose other limits' numbers
// only the metadata would carry.
func TestUnaryWithoutRateLimitHeadersAllocatesNothing(t *testing.T) {
	off := grpclimit.WithRateLimitHeaders(false)
	assert.Zero(t, unaryAllocs(t, service.Rules{Default: service.Limits{allowAll}}, off), "a rule of one limit")
	assert.Zero(t, unaryAllocs(t, severalLimits, off), "a rule of several limits")
}

// TestUnaryRateLimitHeadersCostThreeAllocations: with the metadata on, an
// allowed unary call under a rule of one limit costs the three allocations
// the package documentation counts: the RateLimit item's text and value,
// and the metadata map's two.
func TestUnaryRateLimitHeadersCostThreeAllocations(t *testing.T) {
	assert.EqualValues(t, 3, unaryAllocs(t, service.Rules{Default: service.Limits{allowAll}}))
}
