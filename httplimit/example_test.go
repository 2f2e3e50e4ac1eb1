package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// A fixed window of 2 requests per second for every (client IP, route), and
// a token bucket for the search route, on a fake clock.
func ExampleNew() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	now.Store(int64(10 * time.Second))
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	err = svc.ConfigureAPI("GET /search", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second})
	if err != nil {
		panic(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "results") })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	h := httplimit.New(svc)(mux) // the user is the client IP, the API the mux pattern

	do := func(path string) {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "192.0.2.1:51234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		line := fmt.Sprint(w.Code, " ", w.Header().Get("RateLimit-Policy"), " ", w.Header().Get("RateLimit"))
		if ra := w.Header().Get("Retry-After"); ra != "" {
			line += " retry-after=" + ra
		}
		fmt.Println(line)
	}
	do("/")
	do("/about") // the same API as "/": its pattern is "/"
	do("/")
	do("/search")
	now.Add(int64(time.Second))
	do("/")
	// Output:
	// 200 "fixedwindow-2-1s";q=2;w=1 "fixedwindow-2-1s";r=1;t=1
	// 200 "fixedwindow-2-1s";q=2;w=1 "fixedwindow-2-1s";r=0;t=1
	// 429 "fixedwindow-2-1s";q=2;w=1 "fixedwindow-2-1s";r=0;t=1 retry-after=1
	// 200 "tokenbucket-5-1s";q=5;w=1 "tokenbucket-5-1s";r=4;t=1
	// 200 "fixedwindow-2-1s";q=2;w=1 "fixedwindow-2-1s";r=1;t=1
}
