package grpclimit_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/hotlimit/hotlimit/grpclimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// authKey is a context key of an authentication interceptor's principal.
type authKey struct{}

// TestKeysEqualHTTPLimitsKeys: as the docs promise, one rule set names the
// same callers over HTTP and gRPC. For the same caller, each key function
// finds the key its httplimit counterpart finds: a metadata entry as a
// header (a long value by the same digest), the client IP (IPv4, an
// IPv4-mapped peer, IPv6 by its /64, a client behind a trusted proxy), and
// a context value; MetadataKey is HeaderKey.
func TestKeysEqualHTTPLimitsKeys(t *testing.T) {
	long := strings.Repeat("k", 1000)
	for _, v := range []string{"premium", "k:1 with spaces", " premium\t", long} {
		assert.Equal(t, httplimit.HeaderKey("X-API-Key", v), grpclimit.MetadataKey("x-api-key", v), "%.20s", v)

		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", v)
		want, ok := httplimit.Header("X-API-Key")(r)
		assert.True(t, ok)
		got, ok := grpclimit.Metadata("X-API-Key")(metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", v)), unaryCall, nil)
		assert.True(t, ok)
		assert.Equal(t, want, got, "%.20s", v)
	}

	proxy := netip.MustParsePrefix("10.0.0.0/8")
	for _, tc := range []struct {
		peer      string // host of the connection
		forwarded string // x-forwarded-for, "" for none
	}{
		{"192.0.2.1", ""},
		{"::ffff:192.0.2.1", ""},
		{"64:ff9b::192.0.2.1", ""},
		{"10.0.0.7", "64:ff9b::203.0.113.9"},
		{"2001:db8:1:2:3:4:5:6", ""},
		{"10.0.0.7", "203.0.113.9, 10.0.0.8"},
		{"10.0.0.7", "2001:db8:9:9::1"},
		{"192.0.2.1", "203.0.113.9"}, // an untrusted peer's entry is ignored
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = net.JoinHostPort(tc.peer, "1234")
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.ParseIP(tc.peer), Port: 1234}})
		if tc.forwarded != "" {
			r.Header.Set("X-Forwarded-For", tc.forwarded)
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("x-forwarded-for", tc.forwarded))
		}
		want, ok := httplimit.ClientIP(httplimit.TrustProxies(proxy))(r)
		assert.True(t, ok)
		got, ok := grpclimit.PeerIP(grpclimit.TrustProxies(proxy))(ctx, unaryCall, nil)
		assert.True(t, ok)
		assert.Equal(t, want, got, "peer %s, x-forwarded-for %q", tc.peer, tc.forwarded)
	}

	// A key whose type's name holds a colon (a struct tag) keeps the
	// colon out of the key's kind, as httplimit does.
	for _, key := range []any{authKey{}, struct {
		A int `auth:"principal"`
	}{}} {
		ctx := context.WithValue(context.Background(), key, "alice")
		want, ok := httplimit.ContextValue(key)(httptest.NewRequest("GET", "/", nil).WithContext(ctx))
		assert.True(t, ok)
		got, ok := grpclimit.ContextValue(key)(ctx, unaryCall, nil)
		assert.True(t, ok)
		assert.Equal(t, want, got, "%T", key)
	}
}

// TestKeysOfANameWithSpacesEqualHTTPLimitsKeys: a name with spaces or tabs
// around it, as a configuration file may hold it, names the same callers
// over gRPC as over HTTP, where httplimit drops them: Metadata finds the
// entry, with the key httplimit.Header finds, and MetadataKey is
// HeaderKey. The name kept as it was found no entry (metadata keys hold no
// space), and MetadataKey made a key no call had.
func TestKeysOfANameWithSpacesEqualHTTPLimitsKeys(t *testing.T) {
	for _, name := range []string{" X-API-Key", "x-api-key\t", " \tX-Api-Key "} {
		assert.Equal(t, httplimit.HeaderKey(name, "premium"), grpclimit.MetadataKey(name, "premium"), "%q", name)
		assert.Equal(t, httplimit.HeaderKey("X-API-Key", "premium"), grpclimit.MetadataKey(name, "premium"), "%q", name)

		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("X-API-Key", "premium")
		want, ok := httplimit.Header(name)(r)
		require.True(t, ok, "%q", name)
		got, ok := grpclimit.Metadata(name)(metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-api-key", "premium")), unaryCall, nil)
		assert.True(t, ok, "%q: the entry is found", name)
		assert.Equal(t, want, got, "%q", name)
	}
}

// TestProxyHeaderWithSpacesReadsTheEntry: ProxyHeader(" X-Real-IP "), as a
// configuration file may hold the name, reads the x-real-ip entry that a
// trusted proxy writes, as httplimit.ProxyHeader reads the header: kept as
// it was, the name found no entry, and every client behind the proxy
// shared the proxy's quota.
func TestProxyHeaderWithSpacesReadsTheEntry(t *testing.T) {
	user := grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("192.0.2.0/24")), grpclimit.ProxyHeader(" X-Real-IP\t"))
	ctx := peer.NewContext(metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-real-ip", "198.51.100.7")),
		&peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 1}})
	got, ok := user(ctx, unaryCall, nil)
	require.True(t, ok)
	assert.Equal(t, "ip:198.51.100.7", got, "the client the proxy names")
}

// TestHostKeysDifferInKindFromHTTPLimits pins what the README says of a
// service that limits an HTTP and a gRPC server by host: the host gets
// the same canonical form over both, with TLS or without, under two kinds, "header:host" and
// "header::authority", so the two keys, and quotas, are apart.
func TestHostKeysDifferInKindFromHTTPLimits(t *testing.T) {
	for _, tc := range []struct {
		host string
		tls  bool
	}{{"API.Example.com:443", true}, {"api.example.com.:80", false}, {"[::1]:443", true}, {"api.example.com:8443", true}} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = tc.host
		ctx := context.Background()
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
			ctx = peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{}})
		} else {
			ctx = peer.NewContext(ctx, &peer.Peer{AuthInfo: insecureInfo{}})
		}
		h, ok := httplimit.Header("Host")(r)
		require.True(t, ok)
		g, ok := grpclimit.Metadata(":authority")(metadata.NewIncomingContext(ctx, metadata.Pairs(":authority", tc.host)), unaryCall, nil)
		require.True(t, ok)
		host, found := strings.CutPrefix(h, "header:host:")
		require.True(t, found, h)
		assert.Equal(t, "header::authority:"+host, g, "%q: the same host, another kind", tc.host)
		assert.NotEqual(t, h, g)
		assert.Equal(t, h, httplimit.HeaderKey("Host", host))
		assert.Equal(t, g, grpclimit.MetadataKey(":authority", host))
	}
}

// insecureInfo is the AuthInfo of a call over insecure credentials.
type insecureInfo struct{}

func (insecureInfo) AuthType() string { return "insecure" }
