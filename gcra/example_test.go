package gcra_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/gcra"
)

// Five requests per second with a burst of seven: seven pass at once, then
// one every 200 ms; 400 ms later exactly two more pass.
func ExampleLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	lim, err := gcra.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
	if err != nil {
		panic(err)
	}
	var got []bool
	for range 8 {
		got = append(got, lim.Allow("k"))
	}
	fmt.Println(got)
	now.Add(int64(400 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	// Output:
	// [true true true true true true true false]
	// true true false
}

// A denied Take says exactly when the same request passes.
func ExampleLimiter_Take() {
	var now atomic.Int64
	lim, err := gcra.New(3, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	d := lim.Take("user-42", 2)
	fmt.Printf("allowed=%t remaining=%d reset in %v\n", d.Allowed, d.Remaining, d.ResetAfter)
	d = lim.Take("user-42", 2)
	fmt.Printf("allowed=%t remaining=%d retry in %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(lim.Take("user-42", 2).Allowed)
	// Output:
	// allowed=true remaining=1 reset in 666.666667ms
	// allowed=false remaining=1 retry in 333.333334ms
	// true
}
