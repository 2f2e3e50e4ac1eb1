package tokenbucket_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// A limiter capped at two keys turns a third away while both are in use,
// and makes room by evicting an idle key once one is full again.
func Example_maxKeys() {
	var now atomic.Int64
	lim, err := tokenbucket.New(2, time.Second, hotlimit.WithClock(now.Load), hotlimit.WithMaxKeys(2))
	if err != nil {
		panic(err)
	}
	fmt.Println(lim.Allow("a"), lim.Allow("b"))
	d := lim.Take("c", 1) // two keys held, neither idle
	fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	now.Add(int64(time.Second)) // a and b are full again: idle
	fmt.Println(lim.Allow("c"), lim.Len())
	// Output:
	// true true
	// false 0 1s
	// true 2
}
