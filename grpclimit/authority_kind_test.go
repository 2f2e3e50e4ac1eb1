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

// TestAuthorityKeyIgnoresCase: calls over loopback to one host, spelt
// "api.example.com" and "API.Example.COM" as their :authority, share the
// quota of Metadata(":authority")'s key, and a rule naming the host in
// any case applies to both. A host name's case carries no meaning, and
// each spelling was a key of its own: a client got a fresh quota per
// spelling, and the host's rule missed it. The port stays in the key.
func TestAuthorityKeyIgnoresCase(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	require.NoError(t, svc.ConfigureUser(grpclimit.MetadataKey(":authority", "Api.Example.com"), cfg(hotlimit.FixedWindow, 2, time.Minute)))
	var rec recorder
	sopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithUser(grpclimit.Metadata(":authority")), grpclimit.WithObserver(rec.observe)))}
	var got []codes.Code
	var users []string
	for _, cc := range serveAuthorities(t, &testService{}, sopts, "api.example.com", "API.Example.COM", "api.example.com", "API.example.com:8443") {
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
		users = append(users, rec.last().User)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted, codes.OK}, got)
	assert.Equal(t, []string{"header::authority:api.example.com", "header::authority:api.example.com",
		"header::authority:api.example.com", "header::authority:api.example.com:8443"}, users)
}
