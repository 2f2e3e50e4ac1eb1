package httplimit_test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// BenchmarkMiddleware measures what the middleware adds to a request: each
// mw=httplimit row against the mw=none row of the same handler. The handler
// sets Content-Type and writes a short body; as in net/http, every request
// gets a fresh header map (allocated in every row, so the difference in
// allocs/op is the middleware's own). The policy, a fixed window of 4e6
// per millisecond on the real clock, never denies: every row is the
// allowed path. Around a ServeMux the middleware asks the mux for the
// pattern, so the request is routed twice; mw=httplimit-inside wraps the
// route's handler inside the mux instead, where r.Pattern is already set.
//
//	go test -run '^$' -bench BenchmarkMiddleware -benchmem -count 5 ./httplimit/
func BenchmarkMiddleware(b *testing.B) {
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", plain)
	type row struct {
		name string
		h    func(*service.Service) http.Handler
	}
	rows := []row{
		{"handler=trivial/mw=none", func(*service.Service) http.Handler { return plain }},
		{"handler=trivial/mw=httplimit", func(s *service.Service) http.Handler { return httplimit.New(s)(plain) }},
		{"handler=trivial/mw=httplimit+legacy", func(s *service.Service) http.Handler {
			return httplimit.New(s, httplimit.WithLegacyHeaders(true))(plain)
		}},
		{"handler=trivial/mw=httplimit+observer", func(s *service.Service) http.Handler {
			var allowed, denied atomic.Int64
			return httplimit.New(s, httplimit.WithObserver(func(e httplimit.Event) {
				if e.Decision.Allowed {
					allowed.Add(1)
				} else {
					denied.Add(1)
				}
			}))(plain)
		}},
		{"handler=mux/mw=none", func(*service.Service) http.Handler { return mux }},
		{"handler=mux/mw=httplimit", func(s *service.Service) http.Handler { return httplimit.New(s)(mux) }},
		{"handler=mux/mw=httplimit-inside", func(s *service.Service) http.Handler {
			inner := http.NewServeMux()
			inner.Handle("GET /items/{id}", httplimit.New(s)(plain))
			return inner
		}},
	}
	for _, mode := range []string{"serial", "parallel"} {
		for _, rw := range rows {
			b.Run(fmt.Sprintf("mode=%s/%s", mode, rw.name), func(b *testing.B) {
				svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 4_000_000, Window: time.Millisecond})
				require.NoError(b, err)
				h := rw.h(svc)
				if mode == "serial" {
					w, r := &writer{h: http.Header{}}, get("/items/7", "192.0.2.1:1234")
					h.ServeHTTP(w, r)
					require.Equal(b, http.StatusOK, statusOf(h, r))
					b.ReportAllocs()
					b.ResetTimer()
					for b.Loop() {
						w.h = make(http.Header)
						h.ServeHTTP(w, r)
					}
					return
				}
				var id atomic.Int32
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					// One client per goroutine, as on a server.
					w := &writer{h: http.Header{}}
					r := get("/items/7", fmt.Sprintf("192.0.2.%d:1234", id.Add(1)))
					for pb.Next() {
						w.h = make(http.Header)
						h.ServeHTTP(w, r)
					}
				})
			})
		}
	}
}

// plain is the handler of the benchmarks: a Content-Type and a short body.
var plain = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = textPlain
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
})

var textPlain = []string{"text/plain; charset=utf-8"}

// statusOf serves r once on h and returns the status written.
func statusOf(h http.Handler, r *http.Request) int {
	return serve(h, r).Code
}
