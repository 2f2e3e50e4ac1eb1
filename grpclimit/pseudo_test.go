package grpclimit_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/grpclimit"
)

// serveAuthorities serves ts with sopts on a loopback TCP port and returns
// one client connection to it per authority, each sending its own
// :authority, as any client can.
func serveAuthorities(t *testing.T, ts *testService, sopts []grpc.ServerOption, authorities ...string) []*grpc.ClientConn {
	t.Helper()
	return serveAuthoritiesWith(t, ts, sopts, insecure.NewCredentials(), authorities...)
}

// serveAuthoritiesWith is serveAuthorities with the clients' transport
// credentials creds; sopts gives the server's.
func serveAuthoritiesWith(t *testing.T, ts *testService, sopts []grpc.ServerOption, creds credentials.TransportCredentials, authorities ...string) []*grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer(sopts...)
	testgrpc.RegisterTestServiceServer(srv, ts)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	var ccs []*grpc.ClientConn
	for _, a := range authorities {
		cc, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(creds), grpc.WithAuthority(a))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		ccs = append(ccs, cc)
	}
	return ccs
}

// TestProxyHeaderPseudoHeaderReadsNoEntry: ProxyHeader(":authority") names
// no entry a proxy writes the client into, and reads none, as httplimit's
// ProxyHeader refuses it and as the doc says of a name holding a colon.
// Read, it let every client behind a trusted proxy (which passes the
// client's :authority on, as Envoy does) choose its key by naming an
// address as its authority: two clients of one proxy, here each sending its
// own authority over loopback, each had a quota of their own.
func TestProxyHeaderPseudoHeaderReadsNoEntry(t *testing.T) {
	for _, name := range []string{":authority", " :Authority ", ":path"} {
		t.Run(name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			var rec recorder
			user := grpclimit.PeerIP(grpclimit.TrustProxies(netip.MustParsePrefix("127.0.0.0/8")), grpclimit.ProxyHeader(name))
			sopts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
				grpclimit.WithUser(user), grpclimit.WithObserver(rec.observe)))}
			ccs := serveAuthorities(t, &testService{}, sopts, "198.51.100.1", "198.51.100.2")
			var got []codes.Code
			for _, cc := range ccs {
				_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
				got = append(got, status.Code(err))
				assert.Equal(t, "ip:127.0.0.1", rec.last().User, "the proxy's key, not the client's authority")
			}
			assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted}, got, "one quota, the proxy's")
		})
	}
}
