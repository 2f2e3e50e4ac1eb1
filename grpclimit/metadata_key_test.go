package grpclimit_test

import (
	"context"
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

// TestMetadataValueIsTheFieldValue sends one API key with whitespace
// around it over a real connection. gRPC metadata are HTTP/2 fields, whose
// value holds no leading or trailing whitespace (RFC 9110; HTTP/1.1 strips
// it), but grpc-go passes it on. Kept, it made each spelling a key of its
// own: a client holding one key, checked by an authentication that trims
// it, got a fresh quota per spelling, and a rule naming the key missed it.
// The key is the field value, as httplimit keys the same header. (grpc-go's
// client refuses a tab in a value, so spaces alone are sent here.)
func TestMetadataValueIsTheFieldValue(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	require.NoError(t, svc.ConfigureUser(grpclimit.MetadataKey("x-api-key", "premium"), cfg(hotlimit.FixedWindow, 2, time.Minute)))
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithUser(grpclimit.Metadata("x-api-key")), grpclimit.WithObserver(rec.observe)))})
	var got []codes.Code
	var users []string
	for _, key := range []string{"k1", "k1 ", "  k1", " premium", "premium ", "premium", "   ", " "} {
		c := metadata.AppendToOutgoingContext(ctx(t), "x-api-key", key)
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
		users = append(users, rec.last().User)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted, codes.ResourceExhausted,
		codes.OK, codes.OK, codes.ResourceExhausted, codes.OK, codes.ResourceExhausted}, got)
	assert.Equal(t, []string{"header:x-api-key:k1", "header:x-api-key:k1", "header:x-api-key:k1",
		"header:x-api-key:premium", "header:x-api-key:premium", "header:x-api-key:premium", "", ""}, users,
		"whitespace alone is no key: the keyless quota")
}

// TestOutgoingMetadataValueIsTheFieldValue: OutgoingMetadata makes the key
// of the value a client sends as Metadata makes it of the value the server
// reads: without the spaces and tabs around it, an :authority in lower
// case, a binary entry's bytes whole, and spaces alone no key.
func TestOutgoingMetadataValueIsTheFieldValue(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"x-api-key", " k1\t", "header:x-api-key:k1"},
		{":authority", "API.Example.com", "header::authority:api.example.com"},
		{"x-id-bin", " k1", grpclimit.MetadataKey("x-id-bin", " k1")},
		{"x-api-key", " \t", ""},
	} {
		out := metadata.NewOutgoingContext(context.Background(), metadata.Pairs(tc.name, tc.value))
		key, ok := grpclimit.OutgoingMetadata(tc.name)(out, "/s/m", nil)
		assert.Equal(t, tc.want != "", ok, "%s %q", tc.name, tc.value)
		assert.Equal(t, tc.want, key, "%s %q", tc.name, tc.value)
	}
	assert.NotEqual(t, grpclimit.MetadataKey("x-id-bin", "k1"), grpclimit.MetadataKey("x-id-bin", " k1"))
}

// TestBinaryMetadataValueIsKeptWhole: a binary ("-bin") entry's value is
// bytes, in which a space or a tab is data like any other: over a real
// connection, "\x20k1" and "k1" are two keys, and MetadataKey names each as
// Metadata finds it. Trimmed as text, they would be one key, and a caller whose
// binary credential differs from another's by a leading byte 0x20 spent
// the other's quota.
func TestBinaryMetadataValueIsKeptWhole(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
		grpclimit.WithUser(grpclimit.Metadata("X-Token-Bin")), grpclimit.WithObserver(rec.observe)))})
	var got []codes.Code
	var users []string
	for _, v := range []string{" k1", "k1\t", "k1"} {
		c := metadata.AppendToOutgoingContext(ctx(t), "x-token-bin", v)
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
		users = append(users, rec.last().User)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.OK}, got, "three keys, a quota each")
	assert.Equal(t, []string{grpclimit.MetadataKey("x-token-bin", " k1"), grpclimit.MetadataKey(" X-Token-Bin", "k1\t"),
		grpclimit.MetadataKey("x-token-bin", "k1")}, users)
	assert.Equal(t, []string{"header:x-token-bin: k1", "header:x-token-bin:k1\t", "header:x-token-bin:k1"}, users)
}
