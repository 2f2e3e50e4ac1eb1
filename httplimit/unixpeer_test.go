package httplimit_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestClientsBehindUnixSocketProxyHaveTheirOwnQuota serves the middleware on
// a real Unix socket, as behind a reverse proxy that reaches the server
// through one: net/http reports every request's peer as "@". Without
// TrustNonIPPeers every client behind the proxy shares that one key; with
// it, each client the proxy names in X-Forwarded-For has its own quota, a
// client's own prepended entries are still ignored, and a request the proxy
// names no client for is keyed by the peer.
func TestClientsBehindUnixSocketProxyHaveTheirOwnQuota(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 1, time.Minute), 0)
	var users []string
	mux := http.NewServeMux()
	mux.Handle("/shared", httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) { users = append(users, e.User) }))(ok))
	mux.Handle("/trusted", httplimit.New(svc,
		httplimit.WithUser(httplimit.ClientIP(httplimit.TrustNonIPPeers())),
		httplimit.WithObserver(func(e httplimit.Event) { users = append(users, e.User) }))(ok))
	srv := &http.Server{Handler: mux}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	call := func(path, xff string) int {
		req, err := http.NewRequest(http.MethodGet, "http://proxy"+path, nil)
		require.NoError(t, err)
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}

	assert.Equal(t, []int{200, 429}, []int{call("/shared", "198.51.100.1"), call("/shared", "198.51.100.2")},
		"by default the header of a non-IP peer is not read: one key for everyone")
	assert.Equal(t, []string{"peer:@", "peer:@"}, users)

	users = nil
	got := []int{
		call("/trusted", "198.51.100.1"),
		call("/trusted", "198.51.100.2"),
		call("/trusted", "6.6.6.6, 198.51.100.2"), // a prepended spoof is ignored
		call("/trusted", ""),
		call("/trusted", "garbage"),
	}
	assert.Equal(t, []int{200, 200, 429, 200, 429}, got)
	assert.Equal(t, []string{"ip:198.51.100.1", "ip:198.51.100.2", "ip:198.51.100.2", "peer:@", "peer:@"}, users)
}
