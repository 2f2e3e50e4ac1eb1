package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestBurstQuotaValueIsTheAdvertisedQuota: a token bucket of 5 per second
// with a burst of 20 passes 20 calls at once and advertises q=20. The
// QuotaFailure of the denial that follows must say the same quota, 20, and
// its description the burst, or a client reading both is told two limits.
func TestBurstQuotaValueIsTheAdvertisedQuota(t *testing.T) {
	c := cfg(hotlimit.TokenBucket, 5, time.Second)
	c.Burst = 20
	svc, _ := newService(t, c, 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc))})
	client := testgrpc.NewTestServiceClient(cc)
	for i := range 20 {
		_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		require.NoError(t, err, "call %d of the burst", i)
	}
	var trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Equal(t, []string{`"tokenbucket-5-1s-burst20";q=20;w=4`}, trailer.Get(grpclimit.MetadataPolicy))
	_, qf := details(t, err)
	require.NotNil(t, qf)
	require.Len(t, qf.GetViolations(), 1)
	v := qf.GetViolations()[0]
	assert.EqualValues(t, 20, v.GetQuotaValue(), "the q of ratelimit-policy")
	assert.Equal(t, `policy "tokenbucket-5-1s-burst20" (5 requests per 1s, bursts of 20)`, v.GetDescription())
	assert.Contains(t, status.Convert(err).Message(), "(5 requests per 1s, bursts of 20) exceeded")
}
