package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// TestKeyCapDenialAdvertisesItsWait: a caller turned away because the key
// cap is full gets a RateLimit field whose reset (t) is its Retry-After,
// for every algorithm: it said t=0 beside Retry-After: 60, and a client
// pacing itself by the field came back at once to be turned away again.
func TestKeyCapDenialAdvertisesItsWait(t *testing.T) {
	for _, alg := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		t.Run(alg.String(), func(t *testing.T) {
			var now atomic.Int64
			now.Store(int64(time.Hour))
			svc, err := service.New(cfg(alg, 2, time.Minute), hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(1))
			require.NoError(t, err)
			h := httplimit.New(svc, httplimit.WithUser(httplimit.Header("X-User")))(ok)
			get := func(user string) *http.Response {
				r := httptest.NewRequest(http.MethodGet, "/x", nil)
				r.Header.Set("X-User", user)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w.Result()
			}
			require.Equal(t, http.StatusOK, get("alice").StatusCode, "alice takes the one room")

			resp := get("bob")
			require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "no room for bob")
			retry := resp.Header.Get("Retry-After")
			require.NotEmpty(t, retry)
			assert.NotEqual(t, "0", retry)
			assert.Regexp(t, `;r=0;t=`+retry+`$`, resp.Header.Get("RateLimit"), "the reset is the wait")
		})
	}
}
