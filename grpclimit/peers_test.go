package grpclimit_test

import (
	"net"
	"net/netip"
	"path/filepath"
	"runtime"
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

// TestRealListenersKeyTheirPeers serves over a real Unix socket and IPv6
// loopback: the Unix peer, which Linux reports as "@", is keyed "peer:@"
// (its forwarding metadata ignored unless TrustNonIPPeers), and ::1 by its
// /64, "ip:::/64", with its port dropped, so that every connection of one
// client shares its quota.
func TestRealListenersKeyTheirPeers(t *testing.T) {
	for _, tc := range []struct{ network, addr, target, user string }{
		{"unix", filepath.Join(t.TempDir(), "grpc.sock"), "unix://", "peer:@"},
		{"tcp", "[::1]:0", "", "ip:::/64"},
	} {
		t.Run(tc.network, func(t *testing.T) {
			if tc.network == "unix" && runtime.GOOS != "linux" {
				t.Skip("the Unix peer's name is Linux's")
			}
			ln, err := net.Listen(tc.network, tc.addr)
			if err != nil && tc.network == "tcp" {
				t.Skipf("no IPv6 loopback: %v", err)
			}
			require.NoError(t, err)
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			var rec recorder
			sopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc, grpclimit.WithObserver(rec.observe)))}
			cc := serve(t, ln, tc.target+ln.Addr().String(), nil, &testService{}, sopts, nil)
			var got []codes.Code
			for _, xff := range []string{"198.51.100.1", "198.51.100.2"} {
				c := metadata.AppendToOutgoingContext(ctx(t), "x-forwarded-for", xff)
				_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
				got = append(got, status.Code(err))
				assert.Equal(t, tc.user, rec.last().User)
			}
			assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted}, got, "one quota, whatever the metadata says")
		})
	}
}

// TestForwardedObfuscatedPortKeysTheClient: over a real connection from a
// trusted proxy, a forwarded entry whose port alone is obfuscated (RFC
// 7239's for="198.51.100.7:_p1") names the client, so two clients behind
// the proxy have a quota each, rather than sharing the proxy's.
func TestForwardedObfuscatedPortKeysTheClient(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var rec recorder
	user := grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("127.0.0.0/8")), grpclimit.ProxyHeader("Forwarded"))
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(user), grpclimit.WithObserver(rec.observe)))})
	for _, client := range []string{"198.51.100.1", "198.51.100.2"} {
		c := metadata.AppendToOutgoingContext(ctx(t), "forwarded", `for="`+client+`:_conn7"`)
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
		assert.Equal(t, codes.OK, status.Code(err), "client %s: its own quota", client)
		assert.Equal(t, "ip:"+client, rec.last().User)
	}
}

// TestClientsTranslatedFromIPv4HaveTheirOwnQuota: over a real connection
// from a trusted proxy, a client that a NAT64 or SIIT translator names by
// its IPv4 address within 64:ff9b::/96 (RFC 6052) is keyed by that IPv4
// address, as httplimit keys it, not by the one /64 that holds every such
// address: two IPv4 clients have a quota each, and a rule naming one
// applies to it.
func TestClientsTranslatedFromIPv4HaveTheirOwnQuota(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	require.NoError(t, svc.ConfigureUser("ip:198.51.100.9", cfg(hotlimit.FixedWindow, 2, time.Minute)))
	var rec recorder
	user := grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("127.0.0.0/8")))
	cc := serveTCP(t, &testService{}, []grpc.ServerOption{grpc.ChainUnaryInterceptor(
		grpclimit.UnaryServerInterceptor(svc, grpclimit.WithUser(user), grpclimit.WithObserver(rec.observe)))})
	var got []codes.Code
	var users []string
	for _, client := range []string{"64:ff9b::203.0.113.7", "64:ff9b::c633:6409", "64:ff9b::198.51.100.9", "64:ff9b::203.0.113.7"} {
		c := metadata.AppendToOutgoingContext(ctx(t), "x-forwarded-for", client)
		_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(c, &testgrpc.SimpleRequest{})
		got = append(got, status.Code(err))
		users = append(users, rec.last().User)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.OK, codes.OK, codes.ResourceExhausted}, got)
	assert.Equal(t, []string{"ip:203.0.113.7", "ip:198.51.100.9", "ip:198.51.100.9", "ip:203.0.113.7"}, users)
}
