package httplimit_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// outcomeCounts counts Events by rule and outcome, decisions and requests.
type outcomeCounts struct {
	mu        sync.Mutex
	decisions map[string]int
	requests  map[string]int
}

func (c *outcomeCounts) observe(e hotlimit.Event) {
	k := e.RuleName() + " " + e.Outcome.String()
	c.mu.Lock()
	c.decisions[k]++
	c.requests[k] += e.N
	c.mu.Unlock()
}

// TestObserversCountEveryRequestConcurrently: requests from one client to
// two routes, from many goroutines, with the clock frozen. Each route's rule
// passes exactly its limit; the service's observer hears of every request
// once, under the route's rule, with N 1 and the outcome the client got; the
// middleware's observer hears of every request once; and a limit in shadow
// mode reports its would-be denials while the client passes.
func TestObserversCountEveryRequestConcurrently(t *testing.T) {
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "FixedWindow", "limit": 7, "window": "1m"}],
	  "apis": {"GET /pay": [
	    {"algorithm": "FixedWindow", "limit": 5, "window": "1m"},
	    {"algorithm": "FixedWindow", "limit": 3, "window": "1h", "shadow": true}]}
	}`))
	require.NoError(t, err)
	seen := &outcomeCounts{decisions: map[string]int{}, requests: map[string]int{}}
	var now atomic.Int64 // frozen
	svc, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(hotlimit.ObserverFunc(seen.observe)))
	require.NoError(t, err)

	var mwEvents, mwAllowed atomic.Int64
	mux := http.NewServeMux()
	mux.Handle("GET /pay", ok)
	mux.Handle("GET /", ok)
	h := httplimit.New(svc, httplimit.WithObserver(func(e httplimit.Event) {
		mwEvents.Add(1)
		if e.Decision.Allowed {
			mwAllowed.Add(1)
		}
	}))(mux)

	goroutines, each := 8, 50
	if testing.Short() {
		each = 10
	}
	var passed [2]atomic.Int64 // "/pay", "/"
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				route, target := (g+i)%2, "/pay"
				if route == 1 {
					target = "/"
				}
				if serve(h, get(target, "192.0.2.1:1234")).Code == http.StatusOK {
					passed[route].Add(1)
				}
			}
		})
	}
	wg.Wait()

	total := goroutines * each
	perRoute := total / 2
	assert.EqualValues(t, 5, passed[0].Load(), "GET /pay passes its enforced limit")
	assert.EqualValues(t, 7, passed[1].Load(), "GET / passes the default")
	assert.EqualValues(t, total, mwEvents.Load(), "the middleware's observer hears of every request")
	assert.EqualValues(t, 12, mwAllowed.Load())

	sum := func(m map[string]int, rule string) int {
		n := 0
		for k, v := range m {
			if strings.HasPrefix(k, rule+" ") {
				n += v
			}
		}
		return n
	}
	pay := `apis["GET /pay"]`
	assert.Equal(t, perRoute, sum(seen.decisions, pay), "one decision per request to GET /pay")
	assert.Equal(t, perRoute, sum(seen.requests, pay), "N is 1")
	assert.Equal(t, perRoute, sum(seen.decisions, "default"))
	assert.Equal(t, perRoute-5, seen.decisions[pay+" denied"], "the client's 429s")
	assert.Equal(t, perRoute-7, seen.decisions["default denied"])
	// Of the 5 that pass the enforced limit, the shadow limit of 3 would
	// have denied 2: they are reported as such, and passed.
	assert.Equal(t, 2, seen.decisions[pay+" shadow_denied"])
	assert.Equal(t, 3, seen.decisions[pay+" allowed"]+seen.decisions[pay+" near_limit"])
	assert.Equal(t, 7, seen.decisions["default allowed"]+seen.decisions["default near_limit"])
}
