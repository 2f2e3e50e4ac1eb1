package main

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/hotlimit/hotlimit/envoyrls/internal/redisproc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisTLSSkipHostname: -redis-tls-skip-hostname, as the reference's
// REDIS_TLS_SKIP_HOSTNAME_VERIFICATION, reaches a Redis whose certificate
// does not name the host it is reached by (its certificate is for
// 127.0.0.1, reached here as localhost) when the certificate verifies
// against the authorities (-redis-tls-ca); it still verifies the chain, so
// a certificate of no known authority is refused at start, as the
// reference refuses it, where -redis-tls-skip-verify would take it.
func TestRedisTLSSkipHostname(t *testing.T) {
	certs := t.TempDir()
	certFile, keyFile := redisproc.SelfSigned(t, certs)
	addr := startRedisTLS(t, certFile, keyFile)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	byName := net.JoinHostPort("localhost", port)
	dir := t.TempDir()
	writeRule(t, dir, "1")
	base := []string{"-config", dir, "-grpc", "127.0.0.1:0", "-http", "", "-redis", byName, "-redis-timeout", "10s", "-redis-prefix", t.Name() + ":"}

	err = run(context.Background(), append(append([]string{}, base...), "-redis-tls-ca", certFile), io.Discard, func(string, string) { t.Error("served") })
	require.Error(t, err, "the certificate does not name localhost")
	assert.Contains(t, err.Error(), "wanted to match localhost")

	srv := startServer(t, append(append([]string{}, base...), "-redis-tls-ca", certFile, "-redis-tls-skip-hostname"), io.Discard)
	countsOneAndStops(t, srv)

	err = run(context.Background(), append(append([]string{}, base...), "-redis-tls-skip-hostname"), io.Discard, func(string, string) { t.Error("served a certificate of no known authority") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate signed by unknown authority")
	assert.Equal(t, 1, exitCode(err))
}
