package slidinglog_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidinglog"
)

// Four requests per second, over any second: the log never admits a fifth
// until the first has left the window.
func ExampleLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	lim, err := slidinglog.New(4, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(20 * time.Second))
	fmt.Println(lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"))
	now.Store(int64(20900 * time.Millisecond))
	fmt.Println(lim.Allow("premium"))
	now.Store(int64(21001 * time.Millisecond))
	fmt.Println(lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"), lim.Allow("premium"))
	// Output:
	// true true true true false
	// false
	// true true true true false
}

// A denied Take says when the same request passes: when enough of the oldest
// logged requests have left the window.
func ExampleLimiter_Take() {
	var now atomic.Int64
	lim, err := slidinglog.New(5, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(10 * time.Second))
	lim.Take("user-42", 3)
	now.Store(int64(40 * time.Second))
	d := lim.Take("user-42", 2)
	fmt.Printf("allowed=%t remaining=%d reset in %v\n", d.Allowed, d.Remaining, d.ResetAfter)
	d = lim.Take("user-42", 3) // the 3rd oldest, at 10 s, leaves at 70 s
	fmt.Printf("allowed=%t remaining=%d retry in %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(lim.Take("user-42", 3).Allowed)
	// Output:
	// allowed=true remaining=0 reset in 1m0s
	// allowed=false remaining=0 retry in 30s
	// true
}

// RetryAfter tells how long a request must wait, without counting it: a
// caller that checks another limit first asks the log only once that one
// admitted, or asks it for the wait alone after another limit denied. The
// log keeps its count (one left at 65s, where a Take would have spent it)
// and holds no phone it was only asked about.
func ExampleLimiter_RetryAfter() {
	var now atomic.Int64
	lim, err := slidinglog.New(3, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	for _, at := range []time.Duration{0, 10 * time.Second, 20 * time.Second} {
		now.Store(int64(at))
		lim.Allow("+15550100")
	}
	now.Store(int64(30 * time.Second))
	fmt.Println(lim.RetryAfter("+15550100", 1), lim.RetryAfter("+15550100", 2))
	now.Store(int64(65 * time.Second)) // the code sent at 0s has left the window
	fmt.Println(lim.RetryAfter("+15550100", 1), lim.RetryAfter("+15550100", 2))
	fmt.Println(lim.Take("+15550100", 0).Remaining, "left: asking counted nothing")
	fmt.Println(lim.RetryAfter("+15550199", 1), "for a phone the log does not hold;", lim.Len(), "phone held")
	// Output:
	// 30s 40s
	// 0s 5s
	// 1 left: asking counted nothing
	// 0s for a phone the log does not hold; 1 phone held
}
