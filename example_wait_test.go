package hotlimit_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// Wait blocks until the request passes. Here time is a fake clock, and the
// sleep advances it, so the example runs at once: 5 per second, drained, and
// a wait for 2 more sleeps exactly 400 ms.
func ExampleWaitN() {
	var now atomic.Int64
	lim, err := tokenbucket.New(5, time.Second, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	sleep := func(ctx context.Context, d time.Duration) error {
		fmt.Println("sleep", d)
		now.Add(int64(d))
		return ctx.Err()
	}
	lim.Take("k", 5)
	err = hotlimit.WaitN(context.Background(), lim, "k", 2, hotlimit.WithSleep(sleep))
	fmt.Println("passed:", err == nil, "at", time.Duration(now.Load()))
	err = hotlimit.WaitN(context.Background(), lim, "k", 6, hotlimit.WithSleep(sleep))
	fmt.Println(err)
	// Output:
	// sleep 400ms
	// passed: true at 400ms
	// hotlimit: 6 requests at once, more than ever pass at once: at most 5 (the burst, or the limit without one): the request can never pass
}
