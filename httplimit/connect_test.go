package httplimit_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestConnectRedirectKeyIsBounded: a ServeMux with the route
// "/users/{id}/" and no "/" behind the middleware, over a real connection.
// A client sends "CONNECT /users/<5000 bytes> HTTP/1.1": the mux answers
// with a redirect to the path and a slash, and, for CONNECT alone, gives
// that path, not a pattern, as the route. The middleware took it for the
// API: a key of 5 KB that the client chose, one per path, each pinning
// that much for as long as its state (a path can be most of a megabyte).
// Now such a redirect counts as a request the mux does not route: under
// the cleaned path, bounded as every path key is, and apart from the
// route's quota, as a GET the mux redirects is not.
func TestConnectRedirectKeyIsBounded(t *testing.T) {
	svc, _ := newService(t, cfg(hotlimit.FixedWindow, 100, time.Minute), time.Hour)
	mux := http.NewServeMux()
	mux.Handle("/users/{id}/", ok)
	mux.Handle("CONNECT /tunnel/{id}", ok)
	var mu sync.Mutex
	var apis []string
	srv := httptest.NewServer(httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) {
		mu.Lock()
		defer mu.Unlock()
		apis = append(apis, e.API)
	}))(mux))
	defer srv.Close()

	connect := func(path string) int {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		return resp.StatusCode
	}
	long := [2]string{strings.Repeat("a", 5000), strings.Repeat("a", 4999) + "b"}
	for _, p := range long {
		assert.Equal(t, http.StatusTemporaryRedirect, connect("/users/"+p), "the mux redirects to the path and a slash")
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(srv.URL + "/users/" + long[0][:300])
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	assert.Equal(t, http.StatusTemporaryRedirect, resp.StatusCode)

	mu.Lock()
	require.Len(t, apis, 3)
	for i, api := range apis[:2] {
		assert.LessOrEqual(t, len(api), 256+len(" sha256:")+64, "CONNECT %d: the API key is bounded", i)
		assert.True(t, strings.HasPrefix(api, "/users/aaaa"), "CONNECT %d: keyed by its path, %.40q", i, api)
	}
	assert.True(t, apis[0] != apis[1], "distinct paths keep distinct keys")
	assert.Equal(t, "/users/{id}/", apis[2], "a GET the mux redirects counts under the route")

	mu.Unlock()

	// A CONNECT the mux routes counts under its pattern, and one it
	// redirects to a short path under that path.
	assert.Equal(t, http.StatusOK, connect("/tunnel/7"))
	assert.Equal(t, http.StatusTemporaryRedirect, connect("/users/7"))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"CONNECT /tunnel/{id}", "/users/7"}, apis[3:])
}
