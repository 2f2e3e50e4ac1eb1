package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestAuthorityKeyDenialNamesItsKind: a denial of a user keyed by
// Metadata(":authority"), over loopback, names the key's kind
// "header::authority" as QuotaFailure's subject, as it names
// "header:x-api-key" for Metadata("x-api-key"). Its first colon, the
// pseudo-header's, was read as the end of the kind, and the subject was
// "header:", the kind of no source.
func TestAuthorityKeyDenialNamesItsKind(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	sopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithUser(grpclimit.Metadata(":authority")), grpclimit.WithObserver(rec.observe)))}
	cc := serveAuthorities(t, &testService{}, sopts, "api.example.com")[0]
	_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	require.NoError(t, err)
	_, err = testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, "header::authority:api.example.com", rec.last().User)
	_, qf := details(t, err)
	require.NotNil(t, qf)
	require.Len(t, qf.GetViolations(), 1)
	assert.Equal(t, "header::authority", qf.GetViolations()[0].GetSubject())
}
