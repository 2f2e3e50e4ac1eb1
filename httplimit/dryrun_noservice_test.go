package httplimit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestDryRunNoServiceLetsThrough: a middleware given no service (nil, or a
// zero service.Service) answered every request 500 even under WithDryRun,
// so a dry run, the way to roll the limiter out without blocking anyone,
// blocked everyone, where grpclimit's interceptors let the calls through.
// Under dry run the request now reaches the handler, over a real
// connection, and the observer is told why, as without dry run, where the
// answer stays 500.
func TestDryRunNoServiceLetsThrough(t *testing.T) {
	for name, svc := range map[string]*service.Service{"nil": nil, "zero": {}} {
		for _, dry := range []bool{true, false} {
			var mu sync.Mutex
			var events []httplimit.Event
			srv := httptest.NewServer(httplimit.New(svc, httplimit.WithDryRun(dry), httplimit.WithObserver(func(e httplimit.Event) {
				mu.Lock()
				defer mu.Unlock()
				events = append(events, e)
			}))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "reached") })))
			resp, err := srv.Client().Get(srv.URL + "/x")
			require.NoError(t, err, name)
			body, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			srv.Close()
			require.NoError(t, err, name)
			if dry {
				assert.Equal(t, http.StatusOK, resp.StatusCode, "%s: a dry run never blocks", name)
				assert.Equal(t, "reached", string(body), name)
			} else {
				assert.Equal(t, http.StatusInternalServerError, resp.StatusCode, "%s: no request goes through unlimited", name)
				assert.NotEqual(t, "reached", string(body), name)
			}
			mu.Lock()
			require.Len(t, events, 1, "%s dry=%v", name, dry)
			e := events[0]
			mu.Unlock()
			assert.EqualError(t, e.Err, "httplimit: no service: give the middleware one made by service.New or service.NewFromRules", name)
			assert.Equal(t, dry, e.DryRun, name)
			assert.Empty(t, resp.Header.Get("RateLimit"), "%s: no limiter decided", name)
		}
	}
}

// TestNoServiceServesExempt: a middleware given no service (nil, or a zero
// service.Service) ignored WithExempt and answered every request 500, an
// exempt health check included, where grpclimit's interceptors serve the
// methods they exempt. An exempt request now reaches the handler, with or
// without dry run, and is not reported to the observer, as with a service;
// any other is answered 500 (served under dry run), as before.
func TestNoServiceServesExempt(t *testing.T) {
	for name, svc := range map[string]*service.Service{"nil": nil, "zero": {}} {
		for _, dry := range []bool{false, true} {
			var mu sync.Mutex
			var observed []string
			srv := httptest.NewServer(httplimit.New(svc, httplimit.WithDryRun(dry),
				httplimit.WithExempt(func(r *http.Request) bool { return r.URL.Path == "/health" }),
				httplimit.WithObserver(func(e httplimit.Event) {
					mu.Lock()
					defer mu.Unlock()
					observed = append(observed, e.Request.URL.Path)
				}))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "reached") })))
			get := func(path string) (int, string) {
				resp, err := srv.Client().Get(srv.URL + path)
				require.NoError(t, err, name)
				defer func() { _ = resp.Body.Close() }()
				body, err := io.ReadAll(resp.Body)
				require.NoError(t, err, name)
				return resp.StatusCode, string(body)
			}
			code, body := get("/health")
			assert.Equal(t, http.StatusOK, code, "%s dry=%v: an exempt request is never limited", name, dry)
			assert.Equal(t, "reached", body, "%s dry=%v", name, dry)
			code, body = get("/x")
			if dry {
				assert.Equal(t, http.StatusOK, code, "%s: a dry run never blocks", name)
				assert.Equal(t, "reached", body, name)
			} else {
				assert.Equal(t, http.StatusInternalServerError, code, "%s: no request goes through unlimited", name)
				assert.NotEqual(t, "reached", body, name)
			}
			srv.Close()
			mu.Lock()
			assert.Equal(t, []string{"/x"}, observed, "%s dry=%v: an exempt request is not reported", name, dry)
			mu.Unlock()
		}
	}
}
