package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestSynctestRetryAfterIsWaitedOnTheFakeClock: a handler behind the
// middleware, its service created in a testing/synctest bubble on the
// default clock, denies the request past the quota with the same
// Retry-After and RateLimit fields at every run (the fixed window is aligned
// on the bubble's start; a bucket's wait rounded up to whole seconds), and
// passes the same request once the bubble has slept those seconds.
func TestSynctestRetryAfterIsWaitedOnTheFakeClock(t *testing.T) {
	for _, tc := range []struct {
		c          hotlimit.Config
		retryAfter string // after 2 at the bubble's start
		rateLimit  string
	}{
		{hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: 10 * time.Second}, "10", `"fixedwindow-2-10s";r=0;t=10`},
		{hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: 3 * time.Second}, "2", `"tokenbucket-2-3s";r=0;t=3`},
	} {
		t.Run(tc.c.Algorithm.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				svc, err := service.New(tc.c)
				require.NoError(t, err)
				h := httplimit.New(svc)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
				do := func() *httptest.ResponseRecorder {
					r := httptest.NewRequest(http.MethodGet, "/pay", nil)
					r.RemoteAddr = "192.0.2.1:51234"
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					return w
				}
				require.Equal(t, http.StatusOK, do().Code, "the first")
				require.Equal(t, http.StatusOK, do().Code, "the second")
				w := do()
				require.Equal(t, http.StatusTooManyRequests, w.Code, "past the quota")
				assert.Equal(t, tc.retryAfter, w.Header().Get("Retry-After"))
				assert.Equal(t, tc.rateLimit, w.Header().Get("RateLimit"))

				secs, err := strconv.Atoi(w.Header().Get("Retry-After"))
				require.NoError(t, err)
				time.Sleep(time.Duration(secs) * time.Second)
				assert.Equal(t, http.StatusOK, do().Code, "after Retry-After on the fake clock")
			})
		})
	}
}
