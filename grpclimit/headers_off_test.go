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

// TestRateLimitHeadersOffKeepsDenials: with WithRateLimitHeaders(false) no
// response carries the RateLimit metadata, as the option says, while a
// denial keeps what a client acts on: ResourceExhausted with its RetryInfo
// and the pushback trailer.
func TestRateLimitHeadersOffKeepsDenials(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Second), 0)
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithRateLimitHeaders(false)))})
	client := testgrpc.NewTestServiceClient(cc)

	var header, trailer metadata.MD
	_, err := client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.NoError(t, err)
	for _, md := range []metadata.MD{header, trailer} {
		assert.Empty(t, md.Get(grpclimit.MetadataPolicy))
		assert.Empty(t, md.Get(grpclimit.MetadataRateLimit))
	}

	header, trailer = nil, nil
	_, err = client.UnaryCall(ctx(t), &testgrpc.SimpleRequest{}, grpc.Header(&header), grpc.Trailer(&trailer))
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)
	assert.Len(t, status.Convert(err).Details(), 2, "RetryInfo and QuotaFailure")
	assert.Equal(t, []string{"1000"}, trailer.Get(grpclimit.MetadataPushback))
	for _, md := range []metadata.MD{header, trailer} {
		assert.Empty(t, md.Get(grpclimit.MetadataPolicy))
		assert.Empty(t, md.Get(grpclimit.MetadataRateLimit))
	}
}
