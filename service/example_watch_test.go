package service_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hotlimit/hotlimit"
	"github.com/hotlimit/hotlimit/service"
)

// A service whose rules follow a JSON file: WatchFile (here WatchFileWith,
// to hear of each reload) reads the file at once and again whenever it
// changes, and pairs whose rule is unchanged keep their counts.
func ExampleService_WatchFile() {
	dir, err := os.MkdirTemp("", "rules")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rules.json")
	write := func(rules string) { // renamed into place, so no read sees half a file
		if err := os.WriteFile(path+".tmp", []byte(rules), 0o644); err != nil {
			panic(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			panic(err)
		}
	}
	write(`{"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}]}`)

	var now atomic.Int64 // a frozen fake clock
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 1, Window: time.Minute}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reloaded := make(chan service.Reload)
	go s.WatchFileWith(ctx, path, service.WatchOptions{
		Interval: 10 * time.Millisecond,
		OnError:  func(err error) { fmt.Println("rules not loaded:", err) },
		OnReload: func(r service.Reload) { reloaded <- r },
		Routes:   []string{"GET /", "GET /search"},
	})

	<-reloaded // the first read
	fmt.Println("GET /      ", calls(s, "alice", "GET /", 4))

	write(`{"default": [{"algorithm": "FixedWindow", "limit": 3, "window": "1m"}],
	        "apis": {"search": [{"algorithm": "FixedWindow", "limit": 1, "window": "1m"}]}}`)
	r := <-reloaded
	fmt.Println("reloaded; rules that no route matches:", r.Unmatched)
	fmt.Println("GET /      ", calls(s, "alice", "GET /", 1), "(the default kept its count)")
	fmt.Println("GET /search", calls(s, "alice", "GET /search", 4), "(the default: \"search\" is not the route)")
	// Output:
	// GET /       YYYN
	// reloaded; rules that no route matches: [search]
	// GET /       N (the default kept its count)
	// GET /search YYYN (the default: "search" is not the route)
}

// New takes the default limit of every (user, API) pair; Configure* methods
// override it for an API, a user or a pair, the most specific rule winning.
func ExampleNew() {
	var now atomic.Int64 // nanoseconds; the example moves time by hand
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 2, Window: time.Second}, hotlimit.WithClock(now.Load))
	if err != nil {
		panic(err)
	}
	if err := s.ConfigureAPI("search", hotlimit.Config{Algorithm: hotlimit.TokenBucket, Limit: 5, Window: time.Second}); err != nil {
		panic(err)
	}
	fmt.Println("alice /home ", calls(s, "alice", "/home", 3))
	fmt.Println("bob   /home ", calls(s, "bob", "/home", 3), "(each user counts apart)")
	fmt.Println("alice search", calls(s, "alice", "search", 6))
	d, policy := s.TakePolicy("alice", "search", 1)
	fmt.Println("denied by", policy, "retry in", d.RetryAfter)
	now.Add(int64(time.Second))
	fmt.Println("a second later", calls(s, "alice", "/home", 1), calls(s, "alice", "search", 1))
	// Output:
	// alice /home  YYN
	// bob   /home  YYN (each user counts apart)
	// alice search YYYYYN
	// denied by TokenBucket 5/1s retry in 200ms
	// a second later Y Y
}

// ConfigureAPI names the rule in its errors, and accepts a rule for an api
// that no request is made to, such as "/pay" where the mux's pattern is
// "GET /pay": UnmatchedAPIs finds it.
func ExampleService_ConfigureAPI() {
	s, err := service.New(hotlimit.Config{Algorithm: hotlimit.FixedWindow, Limit: 100, Window: time.Minute})
	if err != nil {
		panic(err)
	}
	fmt.Println(s.ConfigureAPI("GET /pay", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 0, Window: time.Second}))
	fmt.Println(s.ConfigureAPI("/pay", hotlimit.Config{Algorithm: hotlimit.GCRA, Limit: 5, Window: time.Second}))
	fmt.Println(s.UnmatchedAPIs([]string{"GET /pay", "GET /search"}))
	// Output:
	// service: apis["GET /pay"][0]: hotlimit: Config.Limit 0 must be at least 1: invalid config
	// <nil>
	// [/pay]
}
