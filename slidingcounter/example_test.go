package slidingcounter_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/slidingcounter"
)

// Ten requests per second, on windows aligned on whole seconds. Ten pass at
// 0.9 s; at 1.0 s the previous window's 10 still weigh in full; at 1.1 s they
// weigh ⌊10·0.9⌋ = 9, so one more passes, and at 1.5 s they weigh 5.
func ExampleLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	lim, err := slidingcounter.New(10, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(900 * time.Millisecond))
	fmt.Println(lim.Take("k", 10).Allowed)
	now.Store(int64(1000 * time.Millisecond))
	fmt.Println(lim.Allow("k"))
	now.Store(int64(1100 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"))
	now.Store(int64(1500 * time.Millisecond))
	fmt.Println(lim.Take("k", 0).Remaining)
	// Output:
	// true
	// false
	// true false
	// 4
}

// A denied Take says when the same request passes: here within the current
// window, as the previous window's weight decays: 60 more need prev to weigh ≤ 40, so
// 100·x < 41·60 s with x the window left, x ≤ 24.6 s − 1 ns.
func ExampleLimiter_Take() {
	var now atomic.Int64
	lim, err := slidingcounter.New(100, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(30 * time.Second))
	fmt.Println(lim.Take("user-42", 100).Allowed)
	now.Store(int64(90 * time.Second)) // window 1: prev = 100 weighs ⌊100·30/60⌋ = 50
	d := lim.Take("user-42", 60)
	fmt.Printf("allowed=%t remaining=%d retry in %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(lim.Take("user-42", 60).Allowed)
	// Output:
	// true
	// allowed=false remaining=50 retry in 5.400000001s
	// true
}
