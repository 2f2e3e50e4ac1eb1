package service_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// Rolling out a per-user limit of 3 a minute in shadow mode beside the
// enforced 5 a minute per pair: the metrics count how often it would deny,
// the shadow hook says whom, here counted by user (a program would log them,
// or count them on another goroutine).
func ExampleWithShadowHook() {
	rules, err := service.LoadRules(strings.NewReader(`{"default": [
	  {"algorithm": "FixedWindow", "limit": 5, "window": "1m"},
	  {"algorithm": "FixedWindow", "limit": 3, "window": "1m", "scope": "user", "shadow": true}
	]}`))
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	wouldDeny := map[string]int{}
	hook := service.WithShadowHook(func(user, api string, e hotlimit.Event) {
		mu.Lock()
		defer mu.Unlock()
		wouldDeny[user]++
	})
	var now atomic.Int64 // a frozen fake clock
	s, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hook)
	if err != nil {
		panic(err)
	}
	fmt.Println("alice GET /a", calls(s, "alice", "GET /a", 4))
	fmt.Println("alice GET /b", calls(s, "alice", "GET /b", 4))
	fmt.Println("bob   GET /a", calls(s, "bob", "GET /a", 3))
	fmt.Println("would deny:", wouldDeny)
	// Output:
	// alice GET /a YYYY
	// alice GET /b YYYY
	// bob   GET /a YYY
	// would deny: map[alice:5]
}
