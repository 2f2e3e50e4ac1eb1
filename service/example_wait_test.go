package service_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// A process that sends calls paces them instead of being denied: each
// merchant may send a bank 5 authorisations a second, and all merchants
// together 8. m2's fourth call waits for the next second though m2 sent
// only three: the bank's 8 are spent. Wait sleeps until the rule admits
// the call (here on a fake clock, advanced by each sleep, so that the
// output is exact; leave WithSleep out to sleep for real).
func ExampleService_WaitN() {
	var now atomic.Int64 // the fake clock, in nanoseconds
	svc, err := service.NewFromRules(service.Rules{APIs: map[string]service.Limits{"bank-a": {
		{Algorithm: hotlimit.FixedWindow, Limit: 5, Window: time.Second},
		{Algorithm: hotlimit.FixedWindow, Limit: 8, Window: time.Second, Scope: hotlimit.PerAPI},
	}}, Default: service.Limits{hotlimit.Config{Algorithm: hotlimit.Unlimited}}}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		now.Add(int64(d))
		return ctx.Err()
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, merchant := range []string{"m1", "m1", "m1", "m1", "m1", "m2", "m2", "m2", "m2", "m1", "m1"} {
		if err := svc.Wait(ctx, merchant, "bank-a", sleep); err != nil {
			panic(err)
		}
		fmt.Printf("call %d from %s sent at %v\n", i+1, merchant, time.Duration(now.Load()))
	}
	// Output:
	// call 1 from m1 sent at 0s
	// call 2 from m1 sent at 0s
	// call 3 from m1 sent at 0s
	// call 4 from m1 sent at 0s
	// call 5 from m1 sent at 0s
	// call 6 from m2 sent at 0s
	// call 7 from m2 sent at 0s
	// call 8 from m2 sent at 0s
	// call 9 from m2 sent at 1s
	// call 10 from m1 sent at 1s
	// call 11 from m1 sent at 1s
}

// pacedTransport is an http.RoundTripper that waits for the quota of each
// request's host before sending it: a client of a bank's API, paced per
// merchant (a header of the request here).
type pacedTransport struct {
	svc  *service.Service
	next http.RoundTripper
	opts []hotlimit.WaitOption // none but in tests
}

func (t pacedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.svc.Wait(r.Context(), r.Header.Get("X-Merchant"), r.URL.Host, t.opts...); err != nil {
		return nil, err // the request's context ended, or its deadline comes before the quota
	}
	return t.next.RoundTrip(r)
}

// An HTTP client paced by a service: its transport waits for each
// merchant's quota of the host it calls, 2 requests a second here, before
// the request leaves. The third request of m1 waits half a second (on a
// fake clock, advanced by each sleep, so that the output is exact).
func ExampleService_Wait_httpClient() {
	bank := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer bank.Close()
	var now atomic.Int64 // the fake clock, in nanoseconds
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	sleep := hotlimit.WithSleep(func(ctx context.Context, d time.Duration) error {
		now.Add(int64(d))
		return ctx.Err()
	})
	client := &http.Client{Transport: pacedTransport{svc: svc, next: http.DefaultTransport, opts: []hotlimit.WaitOption{sleep}}}
	for i := range 3 {
		req, err := http.NewRequest(http.MethodPost, bank.URL+"/authorize", nil)
		if err != nil {
			panic(err)
		}
		req.Header.Set("X-Merchant", "m1")
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		fmt.Printf("request %d: %d, sent at %v\n", i+1, resp.StatusCode, time.Duration(now.Load()))
	}
	// Output:
	// request 1: 200, sent at 0s
	// request 2: 200, sent at 0s
	// request 3: 200, sent at 500ms
}
