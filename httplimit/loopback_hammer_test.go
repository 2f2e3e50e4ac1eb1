package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
)

// TestLoopbackHammerPassesExactlyTheLimit sends many concurrent requests of
// one client over real loopback connections, with the clock frozen: for
// every algorithm and limit, exactly Limit get 200, and the RateLimit fields
// of the allowed responses give each remaining count Limit−1 … 0 exactly
// once, whatever the interleaving.
func TestLoopbackHammerPassesExactlyTheLimit(t *testing.T) {
	goroutines, each := 8, 30
	if testing.Short() {
		goroutines, each = 4, 10
	}
	for _, a := range []hotlimit.Algorithm{hotlimit.TokenBucket, hotlimit.GCRA, hotlimit.FixedWindow, hotlimit.SlidingCounter, hotlimit.SlidingLog} {
		for _, limit := range []int{1, 2, 7, 100} {
			if limit >= goroutines*each {
				continue
			}
			t.Run(strings.ToLower(a.String())+"/limit="+strconv.Itoa(limit), func(t *testing.T) {
				svc, _ := newService(t, cfg(a, limit, time.Minute), 0)
				srv := httptest.NewServer(httplimit.New(svc)(ok))
				t.Cleanup(srv.Close)
				prefix := `"` + httplimit.PolicyName(cfg(a, limit, time.Minute)) + `";r=`
				var mu sync.Mutex
				seen := map[int]int{}
				denied := 0
				var wg sync.WaitGroup
				for range goroutines {
					wg.Go(func() {
						for range each {
							resp, err := srv.Client().Get(srv.URL + "/x")
							if !assert.NoError(t, err) {
								return
							}
							_ = resp.Body.Close()
							mu.Lock()
							switch resp.StatusCode {
							case http.StatusOK:
								rest, found := strings.CutPrefix(resp.Header.Get("RateLimit"), prefix)
								assert.True(t, found, resp.Header.Get("RateLimit"))
								r, err := strconv.Atoi(rest[:strings.IndexByte(rest+";", ';')])
								assert.NoError(t, err)
								seen[r]++
							case http.StatusTooManyRequests:
								denied++
								assert.NotEmpty(t, resp.Header.Get("Retry-After"))
							default:
								t.Errorf("status %d", resp.StatusCode)
							}
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				require.Len(t, seen, limit, "exactly Limit distinct remaining counts")
				for r := range limit {
					assert.Equal(t, 1, seen[r], "remaining %d", r)
				}
				assert.Equal(t, goroutines*each-limit, denied)
			})
		}
	}
}
