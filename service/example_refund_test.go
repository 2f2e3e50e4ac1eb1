package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// A payment endpoint gives a request back when its backend failed: the
// charge was never made, so it does not count against the user. The rule
// holds two limits, 3 a minute per pair and 10 an hour per user: the
// receipt gives each limit back what it took, under its own key.
func ExampleService_Refund() {
	var now atomic.Int64 // the fake clock, in nanoseconds
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.TokenBucket, Limit: 3, Window: time.Minute},
		{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Hour, Scope: hotlimit.PerUser},
	}}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	defer svc.Close()

	charge := func(fail bool) error {
		if fail {
			return errors.New("card network unavailable")
		}
		return nil
	}
	for _, fail := range []bool{false, true, true, false} {
		d, receipt := svc.TakeReceipt("zed", "POST /pay", 1)
		if !d.Allowed {
			fmt.Println("denied")
			continue
		}
		if err := charge(fail); err != nil {
			svc.Refund(receipt) // not served: the quota is given back
			fmt.Println("failed, given back:", err)
			continue
		}
		fmt.Println("charged")
	}
	_, each, _ := svc.TakeEach(context.Background(), "zed", "POST /pay", 0, nil) // n = 0 only reports
	for _, l := range each {
		fmt.Printf("%v: %d left\n", l.Config, l.Decision.Remaining)
	}
	// Output:
	// charged
	// failed, given back: card network unavailable
	// failed, given back: card network unavailable
	// charged
	// TokenBucket 3/1m0s: 1 left
	// FixedWindow 10/1h0m0s per user: 8 left
}
