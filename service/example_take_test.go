package service_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// TakeEach lists every limit of the pair's rule with its own decision, as a
// gateway advertises each: here 10 a minute per user and 3 a minute per
// pair. The one that decided comes first: for an allowed request the limit
// with the least share of its capacity left (2 of 3 before 9 of 10), for a
// denied one the limit that denied. The fourth request of carol's to /a is
// denied by the pair's limit, and costs her quota of 10 nothing.
func ExampleService_TakeEach() {
	var now atomic.Int64 // the fake clock, in nanoseconds
	svc, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute},
	}}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	now.Store(int64(15 * time.Second)) // a quarter into the window

	var each []service.LimitDecision // reused: no allocation once it has room
	for range 4 {
		var d hotlimit.Decision
		d, each, err = svc.TakeEach(context.Background(), "carol", "/a", 1, each[:0])
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v:", d.Allowed)
		for _, l := range each {
			fmt.Printf(" [%v: %d left, reset in %v]", l.Config, l.Decision.Remaining, l.Decision.ResetAfter)
		}
		fmt.Println()
	}
	// Output:
	// allowed=true: [FixedWindow 3/1m0s: 2 left, reset in 45s] [FixedWindow 10/1m0s per user: 9 left, reset in 45s]
	// allowed=true: [FixedWindow 3/1m0s: 1 left, reset in 45s] [FixedWindow 10/1m0s per user: 8 left, reset in 45s]
	// allowed=true: [FixedWindow 3/1m0s: 0 left, reset in 45s] [FixedWindow 10/1m0s per user: 7 left, reset in 45s]
	// allowed=false: [FixedWindow 3/1m0s: 0 left, reset in 45s] [FixedWindow 10/1m0s per user: 7 left, reset in 45s]
}

// TakeWith decides a call under a limit that comes with it, a tenant's plan
// here, instead of the pair's rule. Each plan gets one limiter, built at its
// first use and kept, so its quota carries across calls; the plans must come
// from a bounded set, never from what a client sends.
func ExampleService_TakeWith() {
	var now atomic.Int64 // the fake clock, in nanoseconds
	svc, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute},
		hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	plans := map[string]hotlimit.Config{
		"free": {Algorithm: hotlimit.TokenBucket, Limit: 2, Window: time.Second},
		"pro":  {Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second},
	}
	for _, tenant := range []string{"free", "pro"} {
		fmt.Printf("%s:", tenant)
		for range 6 {
			d, err := svc.TakeWith(tenant, "GET /search", plans[tenant], 1)
			if err != nil {
				panic(err)
			}
			fmt.Printf(" %v", d.Allowed)
		}
		fmt.Println()
	}
	_, err = svc.TakeWith("free", "GET /search", hotlimit.Config{Algorithm: hotlimit.TokenBucket}, 1)
	fmt.Println(err)
	// Output:
	// free: true true false false false false
	// pro: true true true true true false
	// service: TakeWith's limit TokenBucket 0/0s: hotlimit: Config.Limit 0 must be at least 1: invalid config
}
