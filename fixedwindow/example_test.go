package fixedwindow_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/fixedwindow"
)

// Three requests per second, on windows aligned on whole seconds: three pass
// late in one window and three more early in the next, 150 ms later.
func ExampleLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	lim, err := fixedwindow.New(3, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(10900 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	now.Store(int64(11050 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	// Output:
	// true true true false
	// true true true false
}

// A denied Take says when the same request passes: at the end of the window.
func ExampleLimiter_Take() {
	var now atomic.Int64
	lim, err := fixedwindow.New(5, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	now.Store(int64(40 * time.Second))
	d := lim.Take("user-42", 4)
	fmt.Printf("allowed=%t remaining=%d reset in %v\n", d.Allowed, d.Remaining, d.ResetAfter)
	d = lim.Take("user-42", 2)
	fmt.Printf("allowed=%t remaining=%d retry in %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(lim.Take("user-42", 2).Allowed)
	// Output:
	// allowed=true remaining=1 reset in 20s
	// allowed=false remaining=1 retry in 20s
	// true
}

// Windows align on the clock's origin. The default clock's origin is the
// process's start, so its minutes start wherever the process did; a clock of
// Unix nanoseconds aligns them on UTC minutes (and days on UTC midnight).
func ExampleNew_wallClock() {
	wall := time.Date(2026, 3, 1, 12, 0, 50, 0, time.UTC) // stands in for time.Now()
	unixNano := func() int64 { return wall.UnixNano() }
	lim, err := fixedwindow.New(100, time.Minute, hotlimit.WithClock(unixNano))
	if err != nil {
		panic(err)
	}
	d := lim.Take("user-42", 1)
	fmt.Println("window ends in", d.ResetAfter, "at", wall.Add(d.ResetAfter).Format(time.TimeOnly))
	// Output: window ends in 10s at 12:01:00
}
