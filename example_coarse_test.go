package hotlimit_test

import (
	"fmt"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/tokenbucket"
)

// A CoarseClock is shared by every limiter given its Now. A resolution below
// the least is raised to it, and a started clock never goes back.
func ExampleCoarseClock() {
	fmt.Println(hotlimit.NewCoarseClock(time.Microsecond).Resolution())

	clock := hotlimit.NewCoarseClock(time.Millisecond)
	clock.Start()
	defer clock.Stop()
	lim, err := tokenbucket.New(1, time.Hour, hotlimit.WithClock(clock.Now))
	if err != nil {
		panic(err)
	}
	before := clock.Now()
	fmt.Println(lim.Allow("k"), lim.Allow("k"))
	fmt.Println(clock.Now() >= before)
	// Output:
	// 50µs
	// true false
	// true
}
