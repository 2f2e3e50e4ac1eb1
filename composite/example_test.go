package composite_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/composite"
	"github.com/hotlimit/hotlimit/fixedwindow"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// Ten per second and a thousand per day: a request passes only if both
// limits admit it, and a request the daily limit denies does not use up the
// per-second one.
func Example() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	perSecond, err := tokenbucket.New(10, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	perDay, err := fixedwindow.New(1000, 24*time.Hour, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	lim, err := composite.New(perSecond, perDay)
	if err != nil {
		panic(err)
	}

	passed := 0
	for range 15 {
		if lim.Allow("user-42") {
			passed++
		}
	}
	fmt.Println("burst:", passed, "passed")

	// A steady 10 per second for 99 seconds: 990 more, 1000 in the day.
	for range 990 {
		now.Add(int64(100 * time.Millisecond))
		if !lim.Allow("user-42") {
			fmt.Println("denied at", time.Duration(now.Load()))
		}
	}
	now.Add(int64(100 * time.Millisecond))
	d := lim.Take("user-42", 1)
	fmt.Printf("allowed=%t limit=%d remaining=%d\n", d.Allowed, d.Limit, d.Remaining)

	// The day is used up: the per-second bucket keeps its tokens.
	now.Add(int64(time.Second))
	d = lim.Take("user-42", 5)
	fmt.Printf("allowed=%t retry in %v; per second: %d left\n", d.Allowed, d.RetryAfter, perSecond.Take("user-42", 0).Remaining)
	// Output:
	// burst: 10 passed
	// allowed=false limit=1000 remaining=0
	// allowed=false retry in 23h58m19.9s; per second: 10 left
}
