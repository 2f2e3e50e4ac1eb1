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
// counting the request there: the codes left are as before the question
// (at 10.5s, one, so that the code at 20s is sent), and the request passes
// after the longer wait.
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

	const phone = "+15550100"
	for _, at := range []time.Duration{0, 10 * time.Second, 10*time.Second + 500*time.Millisecond,
		20 * time.Second, 20*time.Second + 500*time.Millisecond, time.Minute} {
		now.Store(int64(at))
		d := perSecond.Take(phone, 1)
		if d.Allowed && codes.Allow(phone) { // codes has room whenever perSecond passes, here
			fmt.Printf("%v: sent\n", at)
			continue
		}
		wait, err := askCodes.Ask(context.Background(), phone, 1)
		if err != nil {
			panic(err) // a limiter that could not tell: redislimit's, Redis down
		}
		fmt.Printf("%v: denied, per second: retry in %v, codes: retry in %v, %d left\n",
			at, d.RetryAfter, wait, codes.Take(phone, 0).Remaining)
	}
	// Output:
	// 0s: sent
	// 10s: sent
	// 10.5s: denied, per second: retry in 500ms, codes: retry in 0s, 1 left
	// 20s: sent
	// 20.5s: denied, per second: retry in 500ms, codes: retry in 39.5s, 0 left
	// 1m0s: sent
}
