package httplimit_test

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestPanicsReachNetHTTPAsTheDocSays: over a real connection, each function
// given to the middleware panics on one request, as the package doc
// describes: net/http drops the connection, so the client gets no response;
// a key function's or the exempt function's panic took nothing, an
// observer's or a policy name function's on an allowed request spent its
// quota, and the next request of the same client is served, from what is
// left, by the same middleware (no lock is left held).
func TestPanicsReachNetHTTPAsTheDocSays(t *testing.T) {
	panicky := func(hit *atomic.Bool) {
		if hit.CompareAndSwap(true, false) {
			panic("callback bug")
		}
	}
	cases := []struct {
		name  string
		spent bool // the panicking request spent its quota
		opt   func(hit *atomic.Bool) httplimit.Option
	}{
		{"user key", false, func(hit *atomic.Bool) httplimit.Option {
			return httplimit.WithUser(func(r *http.Request) (string, bool) { panicky(hit); return httplimit.ClientIP()(r) })
		}},
		{"api key", false, func(hit *atomic.Bool) httplimit.Option {
			return httplimit.WithAPI(func(*http.Request) (string, bool) { panicky(hit); return "api", true })
		}},
		{"exempt", false, func(hit *atomic.Bool) httplimit.Option {
			return httplimit.WithExempt(func(*http.Request) bool { panicky(hit); return false })
		}},
		{"policy name", true, func(hit *atomic.Bool) httplimit.Option {
			return httplimit.WithPolicyName(func(c hotlimit.Config) string { panicky(hit); return "p" })
		}},
		{"observer", true, func(hit *atomic.Bool) httplimit.Option {
			return httplimit.WithObserver(func(httplimit.Event) { panicky(hit) })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc, _ := newService(t, cfg(hotlimit.FixedWindow, 3, time.Minute), time.Hour)
			var hit atomic.Bool
			hit.Store(true)
			var served atomic.Int64
			srv := httptest.NewUnstartedServer(httplimit.New(svc, tc.opt(&hit))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				served.Add(1)
			})))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // net/http logs the panic
			srv.Start()
			defer srv.Close()

			_, err := http.Get(srv.URL + "/x")
			require.Error(t, err, "the panicking request gets no response")
			assert.False(t, hit.Load(), "the callback panicked")
			resp, err := http.Get(srv.URL + "/x")
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, int64(1), served.Load(), "only the second request is served")
			want := "r=1;" // the panicking request spent one of three
			if !tc.spent {
				want = "r=2;"
			}
			assert.Contains(t, resp.Header.Get("RateLimit"), want)
		})
	}
}
