package httplimit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// A deny handler of one's own writes the body of a 429, and leaves the
// requests that spent no quota, ended (the client left) or denied because a
// limiter could not decide, to DenyProblem's 503: it is called for them
// too, as the third request shows.
func ExampleWithDenyHandler() {
	frozen := func() int64 { return int64(time.Hour) }
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second},
		hotlimit.WithClock(frozen))
	if err != nil {
		panic(err)
	}
	deny := func(w http.ResponseWriter, r *http.Request, e httplimit.Event) {
		if e.Ended || e.Unavailable {
			fmt.Print("no quota spent: ")
			httplimit.DenyProblem(w, r, e) // 503
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		json.NewEncoder(w).Encode(map[string]any{"error": "slow down", "policy": e.Policy})
	}
	h := httplimit.New(svc, httplimit.WithDenyHandler(deny))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "paid")
	}))

	do := func(r *http.Request) {
		r.RemoteAddr = "192.0.2.1:51234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Print(w.Code, " ", w.Body.String())
	}
	do(httptest.NewRequest(http.MethodPost, "/pay", nil))
	do(httptest.NewRequest(http.MethodPost, "/pay", nil))
	gone, cancel := context.WithCancel(context.Background())
	cancel() // the client left before the request was decided
	do(httptest.NewRequest(http.MethodPost, "/pay", nil).WithContext(gone))
	// Output:
	// 200 paid
	// 429 {"error":"slow down","policy":"gcra-1-1s"}
	// no quota spent: 503 {"type":"about:blank","title":"Service Unavailable","status":503,"detail":"The request ended before it was served."}
}
