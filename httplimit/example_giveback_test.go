package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/httplimit"
	"github.com/hotlimit/hotlimit/service"
)

// A payment whose backend fails should not count against its client, but
// the middleware's take cannot be given back: the payment route is exempt
// from it, and its handler takes with a receipt, under the user the
// middleware would name, and gives the request back when the backend
// fails. The first payment fails and is given back, so the client's quota
// of 2 still passes two payments.
func ExampleWithExempt_giveBack() {
	frozen := func() int64 { return int64(time.Hour) }
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute},
		hotlimit.WithClock(frozen))
	if err != nil {
		panic(err)
	}
	user := httplimit.ClientIP()
	calls := 0
	charge := func() error { // the payment backend: its first call fails
		calls++
		if calls == 1 {
			return fmt.Errorf("card network unavailable")
		}
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pay", func(w http.ResponseWriter, r *http.Request) {
		u, _ := user(r)
		d, receipt, err := svc.TakeReceiptContext(r.Context(), u, r.Pattern, 1)
		if err != nil && !d.Allowed {
			http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			return
		}
		if !d.Allowed {
			http.Error(w, "too many payments", http.StatusTooManyRequests)
			return
		}
		if err := charge(); err != nil {
			// Given back even if the client has left meanwhile.
			_ = svc.RefundContext(context.WithoutCancel(r.Context()), receipt)
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		fmt.Fprintln(w, "paid")
	})
	isPay := func(r *http.Request) bool { return r.Method == http.MethodPost && r.URL.Path == "/pay" }
	h := httplimit.New(svc, httplimit.WithUser(user), httplimit.WithExempt(isPay))(mux)

	for range 4 {
		r := httptest.NewRequest(http.MethodPost, "/pay", nil)
		r.RemoteAddr = "192.0.2.1:51234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Print(w.Code, " ", w.Body.String())
	}
	// Output:
	// 502 card network unavailable
	// 200 paid
	// 200 paid
	// 429 too many payments
}
