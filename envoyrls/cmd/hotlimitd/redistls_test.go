package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	rlext "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startRedisTLS starts a redis-server that takes TLS connections only, with
// the certificate of certFile, on a free loopback port, and returns its
// address once the server answering there over TLS is that process; the
// test is skipped where redis-server has no TLS (outside CI).
func startRedisTLS(t *testing.T, certFile, keyFile string) string {
	t.Helper()
	certPEM, err := os.ReadFile(certFile)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM), "certificate in %s", certFile)
	addr, _, err := redisproc.Start(t, redisproc.Config{
		TLS: &tls.Config{RootCAs: roots, ServerName: "127.0.0.1"},
		Args: func(port int) []string {
			return []string{"--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
				"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no"}
		},
	})
	if errors.Is(err, redisproc.ErrExited) {
		if os.Getenv("CI") != "" {
			t.Fatalf("redis-server without TLS: %v", err)
		}
		t.Skipf("redis-server without TLS: %v", err)
	}
	require.NoError(t, err)
	return addr
}

// TestRedisTLSCA: -redis-tls-ca verifies a Redis whose certificate is
// self-signed (or of a private authority) against that file, and decides
// there; with -redis-tls alone the certificate does not verify and
// hotlimitd ends at start, naming the flag; a file that cannot be read or
// holds no certificate is refused at start too.
func TestRedisTLSCA(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := redisproc.SelfSigned(t, certs)
	addr := startRedisTLS(t, certFile, keyFile)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	base := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr, "-redis-timeout", "10s", "-redis-prefix", t.Name() + ":"}

	srv := startServer(t, append(base, "-redis-tls-ca", certFile), io.Discard)
	countsOneAndStops(t, srv)

	notPEM := filepath.Join(certs, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("hello"), 0o600))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"-redis-tls"}, "-redis " + addr + ": tls: failed to verify certificate"},
		{[]string{"-redis-tls-ca", filepath.Join(certs, "missing.pem")}, "-redis-tls-ca: open "},
		{[]string{"-redis-tls-ca", notPEM}, "-redis-tls-ca " + notPEM + ": no PEM certificate in it"},
	} {
		err := run(context.Background(), append(append([]string{}, base...), tc.args...), io.Discard, func(string, string) { t.Errorf("%v: served", tc.args) })
		require.Error(t, err, "%v", tc.args)
		assert.Contains(t, err.Error(), tc.says)
		assert.Equal(t, 1, exitCode(err))
	}
}

// TestRedisTLSSkipVerifyAloneTurnsTLSOn: -redis-tls-skip-verify alone speaks
// TLS to Redis, as -redis-tls-ca and -redis-tls-skip-hostname do, rather
// than plaintext: an operator who asks not to verify Redis's certificate
// means Redis to have one.
func TestRedisTLSSkipVerifyAloneTurnsTLSOn(t *testing.T) {
	certFile, keyFile := redisproc.SelfSigned(t, t.TempDir())
	addr := startRedisTLS(t, certFile, keyFile)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	srv := startServer(t, []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", addr,
		"-redis-timeout", "10s", "-redis-prefix", t.Name() + ":", "-redis-tls-skip-verify"}, io.Discard)
	countsOneAndStops(t, srv)
}

// countsOneAndStops asks srv, on a rule of 1 for key ip, for ip 1 twice: OK
// then OVER_LIMIT, counted in the Redis it was started on; then stops it.
func countsOneAndStops(t *testing.T, srv *server) {
	t.Helper()
	client := pb.NewRateLimitServiceClient(srv.conn)
	req := &pb.RateLimitRequest{Domain: "web", Descriptors: []*rlext.RateLimitDescriptor{{Entries: []*rlext.RateLimitDescriptor_Entry{{Key: "ip", Value: "1"}}}}}
	for i, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		resp, err := client.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, want, resp.OverallCode, "call %d: counted in Redis", i)
	}
	srv.stop(t)
}
