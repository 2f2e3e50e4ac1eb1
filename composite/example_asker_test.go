package composite_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/slidinglog"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// A caller that checks two limits itself, one per second and three codes
// per minute, asks the second for its wait once the first denied, without
// counting the request there: the request passes after the longer wait.
func ExampleAsker() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	perSecond, err := tokenbucket.New(1, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	codes, err := slidinglog.New(3, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	askCodes := composite.NewAsker(codes, false) // once per limiter

	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		now.Store(int64(at))
		fmt.Println(perSecond.Allow("+15550100") && codes.Allow("+15550100"))
	}
	now.Store(int64(20*time.Second + 500*time.Millisecond))
	d := perSecond.Take("+15550100", 1)
	wait, err := askCodes.Ask(context.Background(), "+15550100", 1)
	if err != nil {
		panic(err) // a limiter that could not tell: redislimit's, Redis down
	}
	fmt.Printf("allowed=%t, per second: retry in %v, codes: retry in %v\n", d.Allowed, d.RetryAfter, wait)
	fmt.Println("codes left:", codes.Take("+15550100", 0).Remaining, "(asking counted nothing)")
	// Output:
	// true
	// true
	// true
	// allowed=false, per second: retry in 500ms, codes: retry in 39.5s
	// codes left: 0 (asking counted nothing)
}
