package httplimit_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestHandlerCanStreamAndHijack: over a real connection, the handler behind
// the middleware gets the server's ResponseWriter, so it can flush a
// streamed response (server-sent events) with the RateLimit fields in its
// header, and take over the connection (a WebSocket upgrade) through
// http.ResponseController; both are counted like any request.
func TestHandlerCanStreamAndHijack(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 2, time.Minute), 0)
	flushed := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first\n")
		if !assert.NoError(t, http.NewResponseController(w).Flush()) {
			return
		}
		<-flushed // the client read the first line before the handler returns
		_, _ = io.WriteString(w, "second\n")
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if !assert.NoError(t, err) {
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: test\r\nConnection: Upgrade\r\n\r\nhello")
		_ = buf.Flush()
	})
	// One API for both routes, so that the last request sees both counted.
	one := httplimit.WithAPI(func(*http.Request) (string, bool) { return "app", true })
	srv := httptest.NewServer(httplimit.New(svc, one)(mux))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/stream")
	require.NoError(t, err)
	assert.Equal(t, `"fixedwindow-2-1m";r=1;t=60`, resp.Header.Get("RateLimit"))
	body := bufio.NewReader(resp.Body)
	line, err := body.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line, "flushed while the handler runs")
	close(flushed)
	rest, err := io.ReadAll(body)
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(rest))
	require.NoError(t, resp.Body.Close())

	req, err := http.NewRequest(http.MethodGet, srv.URL+"/hijack", nil)
	require.NoError(t, err)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "test")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusSwitchingProtocols, resp.StatusCode)
	rw, ok := resp.Body.(io.ReadWriteCloser)
	require.True(t, ok, "a 101 response's body is the connection")
	got, err := io.ReadAll(rw)
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	require.NoError(t, rw.Close())

	resp, err = http.Get(srv.URL + "/stream")
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the streamed and the hijacked request each counted")
}
