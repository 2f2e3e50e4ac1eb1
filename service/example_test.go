package service_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
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

// Rules read from JSON replace a service's whole policy at once; pairs whose
// rule did not change keep their counts. A rule of several limits admits a
// request only when each of them does.
func ExampleLoadRules() {
	var now atomic.Int64 // a frozen fake clock
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println("alice@/home before:", calls(s, "alice", "/home", 2))

	rules, err := service.LoadRules(strings.NewReader(`{
		"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
		"apis":    {"GET /search": [{"algorithm": "token_bucket", "limit": 5, "window": "1s", "burst": 2}]},
		"pairs":   [{"user": "premium", "api": "GET /search", "limits": [
		               {"algorithm": "GCRA", "limit": 4, "window": "1s"},
		               {"algorithm": "FixedWindow", "limit": 6, "window": "1m"}]}]
	}`))
	if err != nil {
		panic(err)
	}
	if err := s.Replace(rules); err != nil {
		panic(err)
	}
	fmt.Println("alice@/home after: ", calls(s, "alice", "/home", 2), "(same rule, count kept)")
	fmt.Println("alice@GET /search: ", calls(s, "alice", "GET /search", 4))
	fmt.Println("premium@GET /search:", calls(s, "premium", "GET /search", 6), "(4 per second...)")
	now.Add(int64(time.Second))
	fmt.Println("one second later:   ", calls(s, "premium", "GET /search", 6), "(...and 6 per minute)")
	fmt.Println(s.ResolveLimits("premium", "GET /search"))

	_, err = service.LoadRules(strings.NewReader(`{
		"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
		"users":   {"alice": [{"algorithm": "GCRA", "limit": 3, "window": "1 min"}]}
	}`))
	fmt.Println(err)
	// Output:
	// alice@/home before: YY
	// alice@/home after:  YN (same rule, count kept)
	// alice@GET /search:  YYNN
	// premium@GET /search: YYYYNN (4 per second...)
	// one second later:    YYNNNN (...and 6 per minute)
	// [GCRA 4/1s FixedWindow 6/1m0s]
	// service: users["alice"][0].window: unknown unit " min" in duration "1 min", want a Go duration such as "1s", "1m" or "24h": invalid config
}

// The JSON form of rules, as encoding/json writes it; LoadRules reads it
// back.
func ExampleRules_MarshalJSON() {
	perSecond := hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 10, Window: time.Second, Burst: 20}
	perMinute := hotlimit.Config{Algorithm: hotlimit.SlidingLog, Limit: 100, Window: time.Minute}
	rules := service.Rules{
		Default: service.Limits{{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute}},
		Users:   map[string]service.Limits{"alice": {perSecond}},
		Pairs:   map[service.Pair]service.Limits{{User: "premium", API: "pay"}: {perSecond, perMinute}},
	}
	b, err := json.MarshalIndent(rules, "", "  ")
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
	back, err := service.LoadRules(bytes.NewReader(b))
	fmt.Println(err, reflect.DeepEqual(back, rules))
	// Output:
	// {
	//   "default": [
	//     {
	//       "algorithm": "FixedWindow",
	//       "limit": 100,
	//       "window": "1m0s"
	//     }
	//   ],
	//   "users": {
	//     "alice": [
	//       {
	//         "algorithm": "TokenBucket",
	//         "limit": 10,
	//         "window": "1s",
	//         "burst": 20
	//       }
	//     ]
	//   },
	//   "pairs": [
	//     {
	//       "user": "premium",
	//       "api": "pay",
	//       "limits": [
	//         {
	//           "algorithm": "TokenBucket",
	//           "limit": 10,
	//           "window": "1s",
	//           "burst": 20
	//         },
	//         {
	//           "algorithm": "SlidingLog",
	//           "limit": 100,
	//           "window": "1m0s"
	//         }
	//       ]
	//     }
	//   ]
	// }
	// <nil> true
}

// A rule of two limits of different scopes: 10 requests per minute per user,
// across every api, and 3 per minute per (user, api) pair. Requests one limit
// denies spend nothing of the other: carol's nine denials on /a leave her
// seven for the other routes.
func Example_scopes() {
	var now atomic.Int64 // a frozen fake clock
	s, err := service.NewFromRules(service.Rules{Default: service.Limits{
		{Algorithm: hotlimit.FixedWindow, Limit: 10, Window: time.Minute, Scope: hotlimit.PerUser},
		{Algorithm: hotlimit.FixedWindow, Limit: 3, Window: time.Minute}, // Scope: hotlimit.PerPair
	}}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	fmt.Println("/a", calls(s, "carol", "/a", 12))
	fmt.Println("/b", calls(s, "carol", "/b", 4))
	fmt.Println("/c", calls(s, "carol", "/c", 4))
	fmt.Println("/d", calls(s, "carol", "/d", 4))
	_, policy := s.TakePolicy("carol", "/e", 1)
	fmt.Println("denied by", policy)
	fmt.Println("dave /a", calls(s, "dave", "/a", 4))
	// Output:
	// /a YYYNNNNNNNNN
	// /b YYYN
	// /c YYYN
	// /d YNNN
	// denied by FixedWindow 10/1m0s per user
	// dave /a YYYN
}

// UnmatchedAPIs finds rules that never apply: here a rule for "pay" in a
// service whose routes are mux patterns such as "GET /pay".
func ExampleUnmatchedAPIs() {
	rules, err := service.LoadRules(strings.NewReader(`{
		"default": [{"algorithm": "FixedWindow", "limit": 100, "window": "1m"}],
		"apis": {
			"pay":         [{"algorithm": "GCRA", "limit": 5, "window": "1s"}],
			"GET /search": [{"algorithm": "GCRA", "limit": 10, "window": "1s"}]
		}
	}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(service.UnmatchedAPIs(rules, []string{"GET /pay", "GET /search"}))
	// Output: [pay]
}

// Operating a service: an observer counting outcomes by rule, a new limit
// rolled out in shadow mode on one API, and an allow-listed user.
func Example_observerShadowAndAllowList() {
	rules, err := service.LoadRules(strings.NewReader(`{
	  "default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
	  "apis":    {"GET /new": [{"algorithm": "FixedWindow", "limit": 2, "window": "1m", "shadow": true}]},
	  "users":   {"health-check": [{"algorithm": "Unlimited"}]}
	}`))
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	observer := hotlimit.ObserverFunc(func(e hotlimit.Event) {
		mu.Lock()
		defer mu.Unlock()
		counts[e.Rule+" "+e.Outcome.String()]++
	})
	var now atomic.Int64 // a frozen fake clock
	s, err := service.NewFromRules(rules, hotlimit.WithClock(now.Load), hotlimit.WithObserver(observer))
	if err != nil {
		panic(err)
	}
	fmt.Println("alice GET /    ", calls(s, "alice", "GET /", 5))
	fmt.Println("alice GET /new ", calls(s, "alice", "GET /new", 5))
	fmt.Println("health-check   ", calls(s, "health-check", "GET /", 5))
	fmt.Println(s.Take("health-check", "GET /", 1).Remaining == math.MaxInt)
	for _, k := range []string{
		"default allowed", "default near_limit", "default denied",
		`apis["GET /new"] allowed`, `apis["GET /new"] near_limit`, `apis["GET /new"] shadow_denied`,
		`users["health-check"] allowed`,
	} {
		fmt.Println(k, counts[k])
	}
	// Output:
	// alice GET /     YYYNN
	// alice GET /new  YYYYY
	// health-check    YYYYY
	// true
	// default allowed 2
	// default near_limit 1
	// default denied 2
	// apis["GET /new"] allowed 1
	// apis["GET /new"] near_limit 1
	// apis["GET /new"] shadow_denied 3
	// users["health-check"] allowed 6
}
