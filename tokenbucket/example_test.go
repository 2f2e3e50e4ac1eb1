package tokenbucket_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// Five requests per second: a burst of five passes at once, then the bucket
// refills one token every 200 ms; 400 ms after it emptied, exactly two pass.
func ExampleLimiter() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	now.Add(int64(400 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	// Output:
	// true true true true true false
	// true true false
}

// A denied Take says when the same request passes, to the nanosecond.
func ExampleLimiter_Take() {
	var now atomic.Int64
	lim, err := tokenbucket.New(10, time.Minute, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	d := lim.Take("user-42", 8)
	fmt.Printf("allowed=%t remaining=%d reset in %v\n", d.Allowed, d.Remaining, d.ResetAfter)
	d = lim.Take("user-42", 4)
	fmt.Printf("allowed=%t remaining=%d retry in %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(d.RetryAfter - 1))
	fmt.Println(lim.Take("user-42", 4).Allowed)
	now.Add(1)
	fmt.Println(lim.Take("user-42", 4).Allowed)
	// Output:
	// allowed=true remaining=2 reset in 48s
	// allowed=false remaining=2 retry in 12s
	// false
	// true
}

// Five requests per second with a burst of seven: seven pass at once, and the
// refill is still five per second, so 400 ms later exactly two more pass.
func ExampleLimiter_burst() {
	var now atomic.Int64
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithBurst(7))
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"),
		lim.Allow("k"), lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	now.Add(int64(400 * time.Millisecond))
	fmt.Println(lim.Allow("k"), lim.Allow("k"), lim.Allow("k"))
	// Output:
	// true true true true true true true false
	// true true false
}

// A request that was admitted and then not served gives its token back: at
// the time of the Take, the bucket is restored exactly.
func ExampleLimiter_Refund() {
	var now atomic.Int64
	lim, err := tokenbucket.New(3, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	d, r := lim.TakeReceipt("k", 2)
	fmt.Println(d.Allowed, d.Remaining, r.N)
	lim.Refund("k", r) // the downstream call failed
	fmt.Println(lim.Take("k", 0).Remaining)
	// Output:
	// true 1 2
	// 3
}

// A key's rate.NewLimiter(2.5, 10) from golang.org/x/time/rate: 2.5 per
// second is 5 per 2 s, with a burst of 10. Each call is named by what it
// replaces; the two decide alike on the same clock (README, "Coming from
// x/time/rate or go-limiter", says within what margin).
func ExampleNew_fromXTimeRate() {
	var now atomic.Int64
	lim, err := tokenbucket.New(5, 2*time.Second, hotlimit.WithBurst(10), hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.Take("k", 10).Allowed) // AllowN(t, 10)
	d := lim.Take("k", 1)                  // AllowN(t, 1), and ReserveN(t, 1).Delay() without reserving
	fmt.Println(d.Allowed, d.RetryAfter)
	now.Add(int64(d.RetryAfter))
	fmt.Println(lim.Take("k", 1).Allowed)
	d = lim.Take("k", 0) // AllowN(t, 0); int(TokensAt(t)); ReserveN(t, 10).Delay(), the wait until full
	fmt.Println(d.Allowed, d.Remaining, d.ResetAfter)
	fmt.Println(lim.Take("k", 11).RetryAfter == hotlimit.Never) // more than the burst: never, as on rate
	fmt.Println(lim.Take("k", -1).Allowed)                      // rate passes it, adding a token; hotlimit never does
	// Output:
	// true
	// false 400ms
	// true
	// true 0 4s
	// true
	// false
}
