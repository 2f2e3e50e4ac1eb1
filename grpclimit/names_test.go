package grpclimit_test

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/grpclimit"
)

// incoming returns a server call's context from the peer addr with the
// metadata pairs, as grpc-go builds it: keys in lower case.
func incoming(addr string, pairs ...string) context.Context {
	ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(addr), Port: 1}})
	return metadata.NewIncomingContext(ctx, metadata.Pairs(pairs...))
}

// TestProxyHeaderNameAsWritten: a metadata key with spaces or tabs around
// it, as a configuration file may hold it, names the key without them, in
// any case: the trusted proxy's x-real-ip is read. A name with spaces
// around it never matched (grpc-go keys incoming metadata by the lower-case
// name as sent), so every client behind the proxy silently shared the
// proxy's quota. A name that can never be a metadata key (a space or a
// colon inside, a byte outside printable ASCII) reads no entry, and every
// client behind the proxy has the proxy's key; the default
// x-forwarded-for, which a proxy that writes another entry may pass
// through from the client, is not read in its place. An empty name, or one
// of spaces alone, keeps the default.
func TestProxyHeaderNameAsWritten(t *testing.T) {
	trusted := grpclimit.TrustProxies(netip.MustParsePrefix("10.0.0.0/8"))
	c := incoming("10.0.0.1", "x-real-ip", "198.51.100.7", "x-forwarded-for", "6.6.6.6")
	for _, name := range []string{" x-real-ip", "X-Real-IP ", "\tx-real-ip\t", " X-REAL-IP "} {
		key, found := grpclimit.PeerIP(trusted, grpclimit.ProxyHeader(name))(c, unaryCall, nil)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "ip:198.51.100.7", key, "%q: the entry the proxy wrote", name)
	}
	fwd := incoming("10.0.0.1", "forwarded", "for=198.51.100.8", "x-forwarded-for", "6.6.6.6")
	key, _ := grpclimit.PeerIP(trusted, grpclimit.ProxyHeader(" Forwarded "))(fwd, unaryCall, nil)
	assert.Equal(t, "ip:198.51.100.8", key, "forwarded, parsed as RFC 7239")
	for _, name := range []string{"x real ip", "x-real-ip:", "x-réal-ip", "x-real\x00ip", ":"} {
		key, found := grpclimit.PeerIP(trusted, grpclimit.ProxyHeader(name))(c, unaryCall, nil)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "ip:10.0.0.1", key, "%q: no entry read, not x-forwarded-for", name)
	}
	for _, name := range []string{"", " ", "\t"} {
		key, _ := grpclimit.PeerIP(trusted, grpclimit.ProxyHeader(name))(c, unaryCall, nil)
		assert.Equal(t, "ip:6.6.6.6", key, "%q: the default, x-forwarded-for", name)
	}
}

// TestMetadataNameAsWritten: Metadata, OutgoingMetadata and MetadataKey
// read a name with spaces or tabs around it, as a configuration file may
// hold it, without them and in lower case, so the key is found and a rule
// names it: Metadata(" x-api-key") found no key in any call, so every
// client fell through to the next source of a FirstOf chain, and
// MetadataKey made a key no call had. A name that can never be a metadata
// key finds none, even one that a Unicode case mapping turns into another
// entry's name (the Kelvin sign lower-cases to k, and read x-api-key).
// A pseudo-header that grpc-go puts in the incoming metadata, :authority,
// is read as any entry.
func TestMetadataNameAsWritten(t *testing.T) {
	in := incoming("192.0.2.1", "x-api-key", "k1")
	out := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "k1")
	for _, name := range []string{" x-api-key", "X-API-Key ", "\tX-API-KEY\t"} {
		key, found := grpclimit.Metadata(name)(in, unaryCall, nil)
		assert.True(t, found, "%q", name)
		assert.Equal(t, "header:x-api-key:k1", key, "%q", name)
		assert.Equal(t, key, grpclimit.MetadataKey(name, "k1"), "%q: the key a rule names", name)
		key, found = grpclimit.OutgoingMetadata(name)(out, unaryCall, nil)
		assert.True(t, found, "%q: outgoing", name)
		assert.Equal(t, "header:x-api-key:k1", key, "%q: outgoing", name)
	}
	for _, name := range []string{"", " ", "x api key", "x-api-key:", "X-API-\u212aEY", "x-api-k\u00e9y", ":"} {
		_, found := grpclimit.Metadata(name)(in, unaryCall, nil)
		assert.False(t, found, "%q: no metadata key, no key", name)
		_, found = grpclimit.OutgoingMetadata(name)(out, unaryCall, nil)
		assert.False(t, found, "%q: outgoing", name)
	}
	key, found := grpclimit.Metadata(" :Authority ")(metadata.NewIncomingContext(context.Background(),
		metadata.MD{":authority": {"api.example.com"}}), unaryCall, nil)
	assert.True(t, found)
	assert.Equal(t, "header::authority:api.example.com", key)
}
