package grpclimit_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// TestMetadataEntriesAsSentOverTheWire: Metadata reads an entry as a real
// client sends it, on a loopback server, whatever the case of the name it
// is given: the first value of a repeated entry, the decoded bytes of a
// binary ("-bin") entry, and no key for an empty value, which passes to the
// next KeyFunc (here the peer's IP) rather than share the one key
// "header:x-api-key:" among every caller that sends it empty. So does
// OutgoingMetadata in a client interceptor, whose empty value leaves the
// call keyless.
func TestMetadataEntriesAsSentOverTheWire(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Second), 0)
	var server, client recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(server.observe), grpclimit.WithUser(grpclimit.FirstOf(
			grpclimit.Metadata("X-API-Key"), grpclimit.Metadata("X-Token-Bin"), grpclimit.PeerIP()))))},
		grpc.WithUnaryInterceptor(grpclimit.UnaryClientInterceptor(svc, grpclimit.WithObserver(client.observe),
			grpclimit.WithUser(grpclimit.OutgoingMetadata("X-API-Key")))))
	for _, tc := range []struct {
		name      string
		md        []string // key, value pairs
		user      string   // the server's key
		clientKey string
	}{
		{"lower case", []string{"x-api-key", "k-1"}, "header:x-api-key:k-1", "header:x-api-key:k-1"},
		{"repeated", []string{"x-api-key", "k-1", "x-api-key", "k-2"}, "header:x-api-key:k-1", "header:x-api-key:k-1"},
		{"binary", []string{"x-token-bin", "\x00\xff"}, "header:x-token-bin:\x00\xff", ""},
		{"empty", []string{"x-api-key", ""}, "ip:127.0.0.1", ""},
		{"empty first", []string{"x-api-key", "", "x-api-key", "k-2"}, "ip:127.0.0.1", ""},
	} {
		c := metadata.AppendToOutgoingContext(ctx(t), tc.md...)
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.user, server.last().User, "%s: the server's key", tc.name)
		assert.Equal(t, tc.clientKey, client.last().User, "%s: the client's key", tc.name)
	}
}
