package service_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// calls makes n calls of Allow(user, api) and spells the answers as Y and N.
func calls(s *service.Service, user, api string, n int) string {
	var b strings.Builder
	for range n {
		if s.Allow(user, api) {
			b.WriteByte('Y')
		} else {
			b.WriteByte('N')
		}
	}
	return b.String()
}

// The original demonstration, replayed with a fake clock in milliseconds: a
// fixed window default, a token bucket API, a sliding log user and a pair
// override, then a concurrent burst against a sliding log.
func Example_demo() {
	var ms atomic.Int64 // the fake clock, in milliseconds
	clock := hotlimit.WithClock(func() int64 { return ms.Load() * int64(time.Millisecond) })
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}

	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Second}, clock)
	must(err)
	must(s.ConfigureAPI("search", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}))
	must(s.ConfigureUser("premium", hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 4, Window: time.Second}))
	must(s.ConfigureUserAPI("premium", "pay", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second}))

	fmt.Println("-- default fixed window 3/s, alice@/home:", calls(s, "alice", "/home", 5))
	fmt.Println("-- bob is independent of alice:           ", calls(s, "bob", "/home", 4))
	fmt.Println("-- token bucket search 5 cap, burst of 7: ", calls(s, "alice", "search", 7))
	ms.Add(400)
	fmt.Println("   +400ms (2 tokens refilled), 3 calls:   ", calls(s, "alice", "search", 3))

	fmt.Println("-- fixed window boundary burst (3/s):")
	ms.Store(10900)
	fmt.Println("   t=10900:", calls(s, "carol", "/home", 3))
	ms.Store(11050)
	fmt.Println("   t=11050:", calls(s, "carol", "/home", 3), " (6 allowed within 150ms: known flaw)")

	fmt.Println("-- sliding log premium 4/s:")
	ms.Store(20000)
	fmt.Println("   t=20000:", calls(s, "premium", "/home", 5))
	ms.Store(20900)
	fmt.Println("   t=20900:", calls(s, "premium", "/home", 1))
	ms.Store(21001)
	fmt.Println("   t=21001:", calls(s, "premium", "/home", 5), " (first 4 expired)")

	fmt.Println("-- user+api override premium/pay (token bucket 2):", calls(s, "premium", "pay", 3))

	ms.Store(100000)
	burst, err := service.New(hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 100, Window: time.Minute}, clock)
	must(err)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < 1000; i += 16 {
				if burst.Allow("u", "api") {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	fmt.Println("-- concurrent: 1000 requests, limit 100 -> allowed =", allowed.Load())

	// Output:
	// -- default fixed window 3/s, alice@/home: YYYNN
	// -- bob is independent of alice:            YYYN
	// -- token bucket search 5 cap, burst of 7:  YYYYYNN
	//    +400ms (2 tokens refilled), 3 calls:    YYN
	// -- fixed window boundary burst (3/s):
	//    t=10900: YYY
	//    t=11050: YYY  (6 allowed within 150ms: known flaw)
	// -- sliding log premium 4/s:
	//    t=20000: YYYYN
	//    t=20900: N
	//    t=21001: YYYYN  (first 4 expired)
	// -- user+api override premium/pay (token bucket 2): YYN
	// -- concurrent: 1000 requests, limit 100 -> allowed = 100
}
