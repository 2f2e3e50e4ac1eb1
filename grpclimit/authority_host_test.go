package grpclimit_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
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

// testTLS returns the transport credentials of a server holding a
// self-signed certificate for "hotlimit.test", and those of a client that
// accepts that certificate alone, whatever authority it sends.
func testTLS(t *testing.T) (server, client credentials.TransportCredentials) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "hotlimit.test"},
		DNSNames:     []string{"hotlimit.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	server = credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}})
	// grpc-go checks the certificate against the host of the authority, which
	// the test varies: the client pins the certificate instead.
	client = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true, // the pin below verifies
		VerifyPeerCertificate: func(chain [][]byte, _ [][]*x509.Certificate) error {
			if len(chain) == 0 || !bytes.Equal(chain[0], der) {
				return errors.New("not the test's certificate")
			}
			return nil
		}})
	return server, client
}

// TestAuthorityKeyIsCanonical serves a quota of one call a minute per
// host, keyed by Metadata(":authority"), over loopback with TLS and
// without. "example.com", "example.com.", "example.com:443" and
// "example.com:80" name one host, with TLS or without, and each was a key
// of its own: a client, which chooses its authority (grpc.WithAuthority),
// got a fresh quota per spelling, and a rule naming the host missed all
// but one. They now share the quota of MetadataKey(":authority",
// "example.com"), which is MetadataKey(":authority", "example.com:443"):
// before, the default port was told by the transport's security, so a
// rule written with ":443" named no call over TLS. A port other than 443
// and 80 is a host of its own, and an IPv6 literal keeps its brackets and
// loses its default port.
func TestAuthorityKeyIsCanonical(t *testing.T) {
	type sent struct {
		authority string
		code      codes.Code
		user      string
	}
	example := grpclimit.MetadataKey(":authority", "example.com")
	require.Equal(t, "header::authority:example.com", example)
	require.Equal(t, example, grpclimit.MetadataKey(":authority", "Example.com.:0443"))
	require.Equal(t, example, grpclimit.MetadataKey(":authority", "example.com:80"))
	serverTLS, clientTLS := testTLS(t)
	for _, c := range []struct {
		name     string
		server   []grpc.ServerOption
		client   credentials.TransportCredentials
		requests []sent
	}{
		{"TLS", []grpc.ServerOption{grpc.Creds(serverTLS)}, clientTLS, []sent{
			{"example.com", codes.OK, example},
			{"EXAMPLE.com.", codes.ResourceExhausted, example},
			{"example.com:443", codes.ResourceExhausted, example},
			{"Example.Com.:0443", codes.ResourceExhausted, example},
			{"example.com:8443", codes.OK, "header::authority:example.com:8443"},
			{"example.com:80", codes.ResourceExhausted, example},
			{"[::1]:443", codes.OK, "header::authority:[::1]"},
			{"[0:0::1]", codes.ResourceExhausted, "header::authority:[::1]"},
		}},
		{"insecure", nil, insecure.NewCredentials(), []sent{
			{"example.com", codes.OK, example},
			{"EXAMPLE.com.", codes.ResourceExhausted, example},
			{"example.com:80", codes.ResourceExhausted, example},
			{"example.com:443", codes.ResourceExhausted, example},
			{"[::1]:80", codes.OK, "header::authority:[::1]"},
			{"[::1]", codes.ResourceExhausted, "header::authority:[::1]"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
			var rec recorder
			sopts := append(c.server, grpc.ChainUnaryInterceptor(grpclimit.UnaryServerInterceptor(svc,
				grpclimit.WithUser(grpclimit.Metadata(":authority")), grpclimit.WithObserver(rec.observe))))
			var authorities []string
			for _, s := range c.requests {
				authorities = append(authorities, s.authority)
			}
			for i, cc := range serveAuthoritiesWith(t, &testService{}, sopts, c.client, authorities...) {
				_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx(t), &testgrpc.SimpleRequest{})
				s := c.requests[i]
				assert.Equal(t, s.code, status.Code(err), "%q: %v", s.authority, err)
				assert.Equal(t, s.user, rec.last().User, "%q", s.authority)
			}
		})
	}
}
