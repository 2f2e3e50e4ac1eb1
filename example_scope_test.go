package hotlimit_test

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// A scope keys a limit's quota by the user, the api or no one, whichever rule
// holds the limit: equal limits of one scope in two rules count one quota.
// Two partners each given "2 per minute, global" share two requests, and a
// user's "3 per minute per user" in the default rule and in the rule of
// GET /pay is one quota of 3 across both; a limit that differs in its
// algorithm, limit, window or burst keeps a quota of its own.
func ExampleScope() {
	var now atomic.Int64 // a frozen fake clock
	global := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Minute, Scope: hotlimit.Global}
	apart := global
	apart.Window = 61 * time.Second
	perUser := hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute, Scope: hotlimit.PerUser}
	svc, err := service.NewFromRules(service.Rules{
		Default: service.Limits{perUser},
		APIs:    map[string]service.Limits{"GET /pay": {perUser, {Algorithm: hotlimit.GCRA, Limit: 1, Window: time.Second}}},
		Users:   map[string]service.Limits{"p1": {global}, "p2": {global}, "p3": {apart}},
	}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println("p1:", svc.Allow("p1", "GET /a"), svc.Allow("p1", "GET /b"))
	fmt.Println("p2:", svc.Allow("p2", "GET /a"))
	fmt.Println("p3:", svc.Allow("p3", "GET /a"), svc.Allow("p3", "GET /a"))
	fmt.Println("carol GET /pay:", svc.Allow("carol", "GET /pay"))
	fmt.Println("carol GET /a:  ", svc.Allow("carol", "GET /a"), svc.Allow("carol", "GET /a"), svc.Allow("carol", "GET /a"))
	// Output:
	// p1: true true
	// p2: false
	// p3: true true
	// carol GET /pay: true
	// carol GET /a:   true true false
}
